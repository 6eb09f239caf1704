"""One step told in words, so a learner can follow it without reading code."""
from __future__ import annotations

import html
import re

from paradec.core.steps import Node
from paradec.plots.lookahead import window
from paradec.plots.tokens import label
from paradec.plots.tree import pending_token
from paradec.traces.trace import Trace

LAST = {
    "bonus": "the accepted path reached the end of its draft, so the same pass also gives a free **bonus** token",
    "resampled": "after the rejection the target **resampled** from the residual",
    "target": "the target picked its own token",
}


def _q(trace: Trace, tok: int) -> str:
    return f"`{label(trace.text_of(tok))}`"


def step_story(trace: Trace, i: int) -> str:
    s = trace.steps[i]
    pend = _q(trace, pending_token(trace, i))
    if not s.nodes:
        cells = len(window(s).window_sees)  # Lookahead's window rides along, never a candidate
        ride = f" (with {cells} window tokens riding along)" if cells else ""
        return (f"**Step {i + 1}.** Nothing was drafted: one target forward after {pend}{ride} "
                f"gives one token, {_q(trace, s.tokens[-1])}.")
    tested = [n for n in s.nodes if n.status != "unreached"]
    last = s.origins[-1]
    greedy = trace.sampling.get("temperature", 0) <= 0
    tail = ("the target's own argmax replaces the rejected draft" if greedy and last == "resampled"
            else LAST.get(last, ""))
    text = (f"**Step {i + 1}.** The drafter proposed {len(s.nodes)} token(s) after {pend} "
            f"({s.draft_forwards} draft forward(s)). ONE target forward over {s.verified} tokens checked them: "
            f"{len(s.accepted)} of {len(tested)} tested were accepted")
    if last != "accepted":
        text += f"; {tail}: {_q(trace, s.tokens[-1])}"
    return text + f". **{len(s.tokens)} token(s) committed** for one target forward."


def _p(n: Node) -> str:
    return "p not recorded" if n.p is None else f"p = {n.p:.3f}"  # a hand-made trace may leave it out


def node_story(trace: Trace, n: Node, greedy: bool) -> str:
    tok = _q(trace, n.token)
    if n.status == "unreached":
        return f"{tok} was never tested: a token before it was rejected, so everything after it is thrown away."
    if greedy:
        verdict = "is" if n.status == "accepted" else "is not"
        return f"Greedy: {tok} {verdict} the target's most likely token ({_p(n)}), so it is **{n.status}**."
    if n.accept_prob is None:  # Medusa-2's typical acceptance: a threshold on p, no draw
        return (f"The target gave {tok} {_p(n)}. It was tested by a threshold on p (typical acceptance, "
                f"LOSSY), not by rejection sampling, so it is **{n.status}**.")
    cmp = "<" if n.status == "accepted" else "≥"
    return (f"The draft gave {tok} q = {n.q:.3f}, the target p = {n.p:.3f}. It is kept with probability "
            f"min(1, p/q) = {n.accept_prob:.3f}; the uniform draw u = {n.u:.3f} {cmp} {n.accept_prob:.3f}, "
            f"so it is **{n.status}**. Tokens the draft over-proposes (q > p) are cut back to p; "
            "the residual max(0, p − q) gives back exactly the mass the draft under-proposed.")


def to_html(md: str) -> str:
    """The stories' markdown (**bold** and `code` only) as HTML, for the browser's player."""
    text = html.escape(md, quote=False)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def _shape(s) -> str:
    chain = all(n.parent == k - 1 for k, n in enumerate(s.nodes))
    return f"a {len(s.nodes)}-token chain" if chain else f"a {len(s.nodes)}-node tree"


def lesson(trace: Trace) -> int:
    """The step (0-based) a page opens on: the first where the method drafts something worth seeing
    (at least 3 drafted and 2 accepted), else the first with an accepted draft, else any draft, else 0."""
    steps = trace.steps
    for good in (lambda s: len(s.nodes) >= 3 and len(s.accepted) >= 2, lambda s: s.accepted, lambda s: s.nodes):
        hit = next((k for k, s in enumerate(steps) if good(s)), None)
        if hit is not None:
            return hit
    return 0


def lesson_note(trace: Trace) -> str:
    """Says on screen why the page opened where it did."""
    i = lesson(trace)
    s = trace.steps[i]
    if not s.nodes:
        return ("Nothing is drafted in this run: every step is one target forward and one token. "
                "Press **Play** to watch the text grow.")
    return (f"**Step {i + 1}** is the first step worth seeing: {_shape(s)} drafted, "
            f"{len(s.accepted)} accepted. A new run opens on it; **First** goes back to the start.")
