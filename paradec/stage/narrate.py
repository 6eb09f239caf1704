"""One step told in words, so a learner can follow it without reading code; in the language of the Words given."""
from __future__ import annotations

import html
import re
from pathlib import PurePath

from .. import catalog
from ..core import records
from ..core.steps import Node
from ..learn import opening
from ..plots.lookahead import window
from ..plots.tokens import label
from ..plots.tree import pending_token
from ..traces.trace import Trace
from ..words import N_, Words

LAST = {
    "bonus": N_("the accepted path reached the end of its draft, so the same pass also gives a free **bonus** token"),
    "resampled": N_("after the rejection the target **resampled** from the residual"),
    "target": N_("the target picked its own token"),
}
TRACE_NAMES = {"greedy": N_("greedy"), "sampled": N_("sampled"), "fixed": N_("fixed"), "heuristic": N_("heuristic"),
               "confidence": N_("confidence"), "learned": N_("learned"), "sequential": N_("sequential")}  # recorded
# runs' names (assets/traces/METHOD-NAME.json)
STATUS = {"accepted": N_("accepted"), "rejected": N_("rejected"), "unreached": N_("unreached")}  # a node's status


def status(value: str, tr: Words) -> str:
    """A drafted token's status (accepted, rejected, unreached), in tr's language."""
    return tr(STATUS[value]) if value in STATUS else value


def _q(trace: Trace, tok: int) -> str:
    return f"`{label(trace.text_of(tok))}`"


def step_story(trace: Trace, i: int, tr: Words) -> str:
    s = trace.steps[i]
    pend = _q(trace, pending_token(trace, i))
    if s.index == 0 and not s.nodes:  # the prefill: the pass carries the whole prompt
        return tr("**Step {n}.** Nothing was drafted yet: ONE target forward over the prompt's {prompt} tokens (the "
                 "prefill: the pass that fills the KV cache) gives the first token, {token}.").format(
            n=i + 1, prompt=len(trace.prompt_ids), token=_q(trace, s.tokens[-1]))
    if not s.nodes:
        cells = len(window(s).window_sees)  # Lookahead's window rides along, never a candidate
        if cells:
            return tr("**Step {n}.** Nothing was drafted: one target forward after {pending} (with {cells} window "
                     "tokens riding along) gives one token, {token}.").format(
                n=i + 1, pending=pend, cells=cells, token=_q(trace, s.tokens[-1]))
        return tr("**Step {n}.** Nothing was drafted: one target forward after {pending} gives one token, "
                 "{token}.").format(n=i + 1, pending=pend, token=_q(trace, s.tokens[-1]))
    tested = [n for n in s.nodes if n.status != "unreached"]
    last = s.origins[-1]
    greedy = trace.sampling.get("temperature", 0) <= 0
    tail = (tr("the target's own argmax replaces the rejected draft") if greedy and last == "resampled"
            else tr(LAST[last]) if last in LAST else "")
    proposed = tr.ngettext("**Step {n}.** The drafter proposed {drafted} token after {pending} ({forwards} draft "
                           "forward(s)).", "**Step {n}.** The drafter proposed {drafted} tokens after {pending} "
                           "({forwards} draft forward(s)).", len(s.nodes)).format(
        n=i + 1, drafted=len(s.nodes), pending=pend, forwards=s.draft_forwards)
    if isinstance(s.record, records.Pld) and s.record.match_at is not None:  # prompt lookup: where it copied from
        proposed += " " + tr("They follow the n-gram {ngram}, found earlier at token {at} of the context.").format(
            ngram=" ".join(_q(trace, t) for t in s.record.ngram), at=s.record.match_at)
    values = {"verified": s.verified, "accepted": len(s.accepted), "tested": len(tested)}
    if last == "accepted":
        checked = tr("ONE target forward over {verified} tokens checked them: {accepted} of {tested} tested were "
                    "accepted.").format(**values)
    else:
        checked = tr("ONE target forward over {verified} tokens checked them: {accepted} of {tested} tested were "
                    "accepted; {tail}: {token}.").format(**values, tail=tail, token=_q(trace, s.tokens[-1]))
    if s.index == 0:  # a first step that drafted: its pass carries the prompt too
        checked += " " + tr("That first pass also carried the prompt's {prompt} tokens (the prefill).").format(
            prompt=len(trace.prompt_ids))
    committed = tr.ngettext("**{n} token committed** for one target forward.",
                            "**{n} tokens committed** for one target forward.", len(s.tokens)).format(n=len(s.tokens))
    return f"{proposed} {checked} {committed}"


def before_story(trace: Trace, i: int, tr: Words) -> str:
    """Step i as its drafter proposed it, before the verify pass (predict mode, until the question is answered)."""
    s = trace.steps[i]
    return tr("**Step {n}.** The drafter proposed {drafted} token(s) after {pending} ({forwards} draft forward(s)). "
             "Next: ONE target forward over {verified} tokens checks them. What will it keep?").format(
        n=i + 1, drafted=len(s.nodes), pending=_q(trace, pending_token(trace, i)), forwards=s.draft_forwards,
        verified=s.verified)


def _p(n: Node, tr: Words) -> str:
    return tr("p not recorded") if n.p is None else f"p = {n.p:.3f}"  # a hand-made trace may leave it out


def node_story(trace: Trace, n: Node, greedy: bool, tr: Words) -> str:
    tok, verdict = _q(trace, n.token), status(n.status, tr)
    if n.status == "unreached":
        return tr("{token} was never tested: a token before it was rejected, so everything after it is thrown "
                 "away.").format(token=tok)
    if greedy:
        if n.status == "accepted":
            return tr("Greedy: {token} is the target's most likely token ({p}), so it is **{status}**.").format(
                token=tok, p=_p(n, tr), status=verdict)
        return tr("Greedy: {token} is not the target's most likely token ({p}), so it is **{status}**.").format(
            token=tok, p=_p(n, tr), status=verdict)
    if n.accept_prob is None:  # Medusa-2's typical acceptance: a threshold on p, no draw
        return tr("The target gave {token} {p}. It was tested by a threshold on p (typical acceptance, LOSSY), not "
                 "by rejection sampling, so it is **{status}**.").format(token=tok, p=_p(n, tr), status=verdict)
    cmp = "<" if n.status == "accepted" else "≥"
    return tr("The draft gave {token} q = {q:.3f}, the target p = {p:.3f}. It is kept with probability "
             "min(1, p/q) = {prob:.3f}; the uniform draw u = {u:.3f} {cmp} {prob:.3f}, so it is **{status}**. "
             "Tokens the draft over-proposes (q > p) are cut back to p; the residual max(0, p − q) gives back "
             "exactly the mass the draft under-proposed.").format(token=tok, q=n.q, p=n.p, prob=n.accept_prob,
                                                                  u=n.u, cmp=cmp, status=verdict)


def plain(md: str) -> str:
    """A story without its markdown: a figure's text alternative."""
    return re.sub(r"\*\*(.+?)\*\*|`([^`]+)`", lambda m: m.group(1) or m.group(2), md)


def tree_alt(trace: Trace, i: int, tr: Words) -> str:
    """What the draft tree shows at step i, in words (its text alternative)."""
    s = trace.steps[i]
    count = {k: sum(n.status == k for n in s.nodes) for k in STATUS}
    return plain(tr("Draft tree of step {n}: {drafted} token(s) drafted after {pending}, {accepted} accepted, "
                   "{rejected} rejected, {unreached} never tested; then the target's own token {token}.").format(
        n=i + 1, drafted=len(s.nodes), pending=_q(trace, pending_token(trace, i)), token=_q(trace, s.tokens[-1]),
        **count))


def mask_alt(trace: Trace, i: int, tr: Words) -> str:
    """What the attention mask shows at step i, in words (its text alternative)."""
    s = trace.steps[i]
    return tr("Attention mask of step {n}: one row per token of the verify pass ({rows}); each drafted token sees the "
             "{context} tokens of context and its own ancestors, never another branch.").format(
        n=i + 1, rows=s.verified, context=s.context_len - 1)


def to_html(md: str) -> str:
    """The stories' markdown (**bold** and `code` only) as HTML, for the browser's player."""
    text = html.escape(md, quote=False)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def _shape(s, tr: Words) -> str:
    chain = all(n.parent == k - 1 for k, n in enumerate(s.nodes))
    return (tr("a {n}-token chain") if chain else tr("a {n}-node tree")).format(n=len(s.nodes))


def lesson(trace: Trace) -> int:
    """The step (0-based) a page opens on: the first its method's rule finds (paradec.learn.opening, named by its
    description), else the first with an accepted draft, else any draft, else 0."""
    described = catalog.METHODS.get(trace.method)
    found = opening.step(described.opening, trace.steps) if described else None
    if found is not None:
        return found
    for good in (lambda s: s.accepted, lambda s: s.nodes):
        hit = next((k for k, s in enumerate(trace.steps) if good(s)), None)
        if hit is not None:
            return hit
    return 0


def lesson_note(trace: Trace, tr: Words) -> str:
    """Says on screen why the page opened where it did."""
    i = lesson(trace)
    s = trace.steps[i]
    if not s.nodes:
        return tr("Nothing is drafted in this run: every step is one target forward and one token. "
                 "Press **Play** to watch the text grow.")
    return tr("**Step {n}** is the first step worth seeing: {shape} drafted, {accepted} accepted. A new run opens "
             "on it; **First** goes back to the start.").format(n=i + 1, shape=_shape(s, tr), accepted=len(s.accepted))


def describe(t: Trace, tr: Words, short: bool = False) -> str:
    """The replayed run in one line: method, parameters, model, draft, sampling, tokens, τ, device and prompt;
    short: its method, model (by its name, not its folder's path), sampling, tokens and τ."""
    temp = t.sampling.get("temperature", 0)
    mode = (tr("greedy") if temp <= 0
            else tr("sampling T={temperature}, top-p={top_p}, seed={seed}").format(
                temperature=temp, top_p=t.sampling.get("top_p", 1), seed=t.sampling.get("seed")))
    draft = " · " + tr("draft: {model}").format(model=t.draft_model) if t.draft_model else ""
    params = ", ".join(f"{k} = {v if v != '' else tr('default')}" for k, v in (t.params or {}).items())
    params = f" ({params})" if params else ""
    if short:
        return tr("Trace: {method} · {model} · {mode} · {tokens} tokens in {steps} target forwards (τ = {tau:.2f})"
                  ).format(method=t.method, model=PurePath(t.model).name[:40], mode=mode, tokens=t.new_tokens,
                           steps=len(t.steps), tau=t.tau)
    return tr("Trace: {method}{params} · {model}{draft} · {mode} · {tokens} tokens in {steps} target forwards "
              "(τ = {tau:.2f}) · {device}/{dtype} · prompt: “{prompt}”").format(
        method=t.method, mode=mode, tokens=t.new_tokens, steps=len(t.steps), tau=t.tau, params=params, model=t.model,
        draft=draft, device=t.device, dtype=t.dtype, prompt=t.prompt[:80])
