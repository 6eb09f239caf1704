"""The exercises a method page ends with, computed from the shipped traces and checked automatically. A method
declares its exercises in paradec.catalog (Method.exercises: a kind and the recorded traces it reads); each kind
here turns them into plain JSON that the app and a static page render alike:

    id        "<method>.<n>"
    kind      "number" (checked within tolerance) or "choice" (answer: the index of the right choice)
    text      the question, [template, values]
    choices   for a choice, the answers offered
    answer    the right number or index
    tolerance for a number, how far off an answer may be
    hint      what a wrong answer gets (not the answer)
    why       the worked answer, shown once it is right (or given up)

check(exercise, given) is the reference checker (paradec/web/learn.js does the same in the browser)."""
from __future__ import annotations

import functools
import math
from collections import Counter
from pathlib import Path

from .. import catalog
from ..costs.speccost import chain_tau
from ..traces.trace import Trace
from . import N_, say
from .questions import _tested, tok
from .roofline import cost_ratio, curve

TRACES = "traces"
CLOSE = 0.05  # two τ within this are "about the same"
MAX_ANSWER = 40  # characters of a typed answer read


@functools.cache
def _load(root: str, name: str) -> Trace:
    return Trace.load(Path(root) / TRACES / f"{name}.json")


def number(text, answer: float, tolerance: float, hint, why) -> dict:
    return {"kind": "number", "text": text, "choices": [], "answer": answer, "tolerance": tolerance, "hint": hint,
            "why": why}


def choice(text, choices: list, answer: int, hint, why) -> dict:
    return {"kind": "choice", "text": text, "choices": choices, "answer": answer, "tolerance": 0, "hint": hint,
            "why": why}


def tau(t: Trace, name: str, root: str) -> dict:
    return number(say(N_("The recorded run `{trace}` committed {tokens} tokens in {forwards} target forwards. What is "
                         "its τ (tokens per target forward)?"), trace=name, tokens=t.new_tokens,
                      forwards=t.target_forwards), t.tau, 0.01,
                  say(N_("τ counts the tokens one target forward commits, bonus included: divide the tokens by the "
                         "forwards.")),
                  say(N_("τ = {tokens} / {forwards} = {tau:.2f}."), tokens=t.new_tokens, forwards=t.target_forwards,
                      tau=t.tau))


def alpha(t: Trace, name: str, root: str) -> dict:
    return number(say(N_("In `{trace}` the target accepted {accepted} drafted tokens, and tested {tested} draft depths "
                         "(a depth is tested when the accepted path reached the one before it). What is the "
                         "acceptance α?"), trace=name, accepted=t.accepted_drafts, tested=t.tested),
                  t.acceptance, 0.01,
                  say(N_("α is a share of the tested depths, not of every drafted node: siblings count once, nodes "
                         "under a rejected one not at all.")),
                  say(N_("α = {accepted} / {tested} = {alpha:.2f}."), accepted=t.accepted_drafts, tested=t.tested,
                      alpha=t.acceptance))


def _k(t: Trace) -> int:
    return t.params.get("k") or max(len(s.nodes) for s in t.steps)


def formula(t: Trace, name: str, root: str) -> dict:
    a, k = round(t.acceptance, 2), _k(t)
    return number(say(N_("With this run's acceptance α = {alpha:.2f} and k = {k} drafted tokens a step, how many "
                         "tokens does a step commit on average if every draft is accepted independently with "
                         "probability α?"), alpha=a, k=k), chain_tau(a, k), 0.02,
                  say(N_("A step commits its accepted drafts plus one token of the target's: the i.i.d. formula is "
                         "(1 − α^(k+1)) / (1 − α) (Leviathan et al.).")),
                  say(N_("(1 − {alpha:.2f}^{k1}) / (1 − {alpha:.2f}) = {tau:.2f}."), alpha=a, k1=k + 1,
                      tau=chain_tau(a, k)))


def versus(t: Trace, name: str, root: str) -> dict:
    a, k = t.acceptance, _k(t)
    model = chain_tau(a, k)
    answer = 2 if abs(t.tau - model) <= CLOSE else 0 if t.tau > model else 1
    return choice(say(N_("`{trace}` measured τ = {tau:.2f} with α = {alpha:.2f} and k = {k}. Against the i.i.d. "
                         "formula (1 − α^(k+1)) / (1 − α), the measured τ is…"), trace=name, tau=t.tau, alpha=a, k=k),
                  [say(N_("higher")), say(N_("lower")), say(N_("the same within {close}"), close=CLOSE)], answer,
                  say(N_("Compute the formula with the run's α and k, then compare it with the measured τ.")),
                  say(N_("The formula gives {model:.2f} against {tau:.2f} measured: acceptances that come in streaks, "
                         "or steps that draft fewer than k, move the measured τ off the formula."), model=model,
                      tau=t.tau))


def keep(t: Trace, name: str, root: str) -> dict:
    tested = [(i, j) for i, s in enumerate(t.steps) if s.nodes and (j := _tested(s)) is not None]
    # the first test whose odds are neither near 0 nor near 1: one worth computing
    i, j = next(((i, j) for i, j in tested if 0.1 < t.steps[i].nodes[j].accept_prob < 0.9), tested[0])
    n = t.steps[i].nodes[j]
    right = min(1.0, n.p / n.q)
    return number(say(N_("In `{trace}`, step {step}: the draft gave `{token}` q = {q:.3f} and the target p = {p:.3f}. "
                         "With what probability is it kept?"), trace=name, step=i + 1, token=tok(t, n.token), q=n.q,
                      p=n.p), right, 0.01,
                  say(N_("Rejection sampling keeps a token the draft over-proposes (q > p) only part of the time, "
                         "and always one it under-proposes.")),
                  say(N_("min(1, p/q) = min(1, {p:.3f} / {q:.3f}) = {prob:.2f}; the draw was u = {u:.2f}."), p=n.p,
                      q=n.q, prob=right, u=n.u))


def idle(t: Trace, name: str, root: str) -> dict:
    empty = sum(not s.nodes for s in t.steps)
    return number(say(N_("Step through `{trace}` ({steps} steps). On how many steps did the lookup find no earlier "
                         "occurrence, so that nothing was drafted?"), trace=name, steps=len(t.steps)), empty, 0,
                  say(N_("A step with nothing drafted says so in its story, and its tree is the pending token alone.")),
                  say(N_("{n} of the {steps} steps drafted nothing: each cost one plain forward, as AR's."), n=empty,
                      steps=len(t.steps)))


def _pass(t: Trace, root: str) -> tuple[int, float]:
    """The tokens in the run's usual verify pass (the first carries the prompt too), and its cost in one-token
    passes (the measured curve)."""
    n = Counter(s.verified for s in t.steps[1:]).most_common(1)[0][0]
    return n, cost_ratio(curve(Path(root)), n)


def slower(t: Trace, name: str, root: str) -> dict:
    n, ratio = _pass(t, root)
    return choice(say(N_("`{trace}` has τ = {tau:.2f}. Its verify pass carries {n} tokens, which costs {ratio:.2f} "
                         "one-token passes on this CPU (the measured curve). Against AR, the run is…"), trace=name,
                      tau=t.tau, n=n, ratio=ratio),
                  [say(N_("slower: τ is below what a pass costs")), say(N_("faster: any τ above 1 beats AR")),
                   say(N_("as fast: a lossless method takes AR's time"))], 0 if t.tau < ratio else 1,
                  say(N_("Compare the tokens a pass commits (τ) with what the pass costs, counted in one-token "
                         "passes.")),
                  say(N_("Each pass commits {tau:.2f} tokens but costs {ratio:.2f} one-token passes: {speed:.2f}x "
                         "AR's speed, before the lookups' own time."), tau=t.tau, ratio=ratio, speed=t.tau / ratio))


def break_even(t: Trace, name: str, root: str) -> dict:
    n, ratio = _pass(t, root)
    return number(say(N_("A verify pass over {n} tokens costs {ratio:.2f} one-token passes on this CPU. What τ would "
                         "`{trace}` need to run exactly as fast as AR?"), n=n, ratio=ratio, trace=name), ratio, 0.02,
                  say(N_("AR commits one token per one-token pass. The method breaks even when a pass's tokens pay for "
                         "its cost.")),
                  say(N_("τ = {ratio:.2f}: one token per one-token pass's worth of time."), ratio=ratio))


def pass_tokens(t: Trace, name: str, root: str) -> dict:
    w, n, g = (t.params[k] for k in ("window", "ngram", "candidates"))
    return number(say(N_("`{trace}` runs a window of W = {w} columns and N = {n} (n-grams of {n} tokens), and "
                         "verifies up to G = {g} pooled n-grams. How many tokens does its verify pass carry at most, "
                         "the pending token included?"), trace=name, w=w, n=n, g=g), (w + g) * (n - 1), 0,
                  say(N_("The window has N − 1 levels of W tokens, and each of the G candidates adds N − 1 tokens.")),
                  say(N_("(W + G)(N − 1) = ({w} + {g}) × {n1} = {tokens}."), w=w, g=g, n1=n - 1,
                      tokens=(w + g) * (n - 1)))


def pool_wins(t: Trace, name: str, root: str) -> dict:
    won = sum(bool(s.accepted) for s in t.steps)
    return number(say(N_("Step through `{trace}` ({steps} steps). On how many did a pooled n-gram get at least one "
                         "token accepted?"), trace=name, steps=len(t.steps)), won, 0,
                  say(N_("A step where a candidate won says so in its story, with the tokens it won.")),
                  say(N_("{won} of the {steps} steps: on the others the pass committed the target's own token "
                         "only."), won=won, steps=len(t.steps)))


def trees(t: Trace, name: str, root: str, other: str = "") -> dict:
    u = _load(root, other)
    runs = [(name, t), (other, u)]
    values = {f"{k}_{x}": v for k, (n, r) in zip("ab", runs) for x, v in
              (("trace", n), ("tokens", r.new_tokens), ("forwards", r.target_forwards),
               ("nodes", max(len(s.nodes) for s in r.steps)))}
    best = 0 if t.tau >= u.tau else 1
    return choice(say(N_("On the same prompt, `{a_trace}` (trees of up to {a_nodes} nodes) committed {a_tokens} tokens "
                         "in {a_forwards} target forwards, and `{b_trace}` (up to {b_nodes} nodes) {b_tokens} in "
                         "{b_forwards}. Which tree commits more tokens per target forward?"), **values),
                  [say("`{trace}`", trace=name), say("`{trace}`", trace=other)], best,
                  say(N_("Compare τ = tokens / target forwards of the two runs.")),
                  say(N_("τ {tau_a:.2f} against {tau_b:.2f}: a bigger tree commits more per pass only while its extra "
                         "nodes get accepted, and every node widens the pass."), tau_a=t.tau, tau_b=u.tau))


def bets(t: Trace, name: str, root: str) -> dict:
    hits = sum(bool(getattr(s.record, "hit", False)) for s in t.steps)
    rounds = sum(getattr(s.record, "hit", None) is not None for s in t.steps)
    return number(say(N_("In `{trace}` the worker bet on {rounds} verify passes. On how many did a bet pay (the next "
                         "chain was drafted while the target verified)?"), trace=name, rounds=rounds), hits, 0,
                  say(N_("Each step's story says whether the worker's bet paid; the details under the player say it "
                         "too.")),
                  say(N_("{hits} of {rounds}: the draft's odds rarely name the target's exact correction."),
                      hits=hits, rounds=rounds))


def speed(t: Trace, name: str, root: str, other: str = "") -> dict:
    u = _load(root, other)
    ms = [1e3 * r.wall_s / max(1, r.new_tokens) for r in (t, u)]
    return choice(say(N_("`{a}` drafts after each verify pass, `{b}` during it; both commit {tokens} tokens in "
                         "{forwards} forwards. Which took less time per token on this 2-core CPU?"), a=name, b=other,
                      tokens=t.new_tokens, forwards=t.target_forwards),
                  [say("`{trace}`", trace=name), say("`{trace}`", trace=other)], 0 if ms[0] <= ms[1] else 1,
                  say(N_("Divide each run's decoding time by its tokens (the table under the player compares them).")),
                  say(N_("{a_ms:.1f} ms a token against {b_ms:.1f}: on two cores the worker slows the target's "
                         "passes about as much as it hides drafting."), a_ms=ms[0], b_ms=ms[1]))


KINDS = {"tau": tau, "alpha": alpha, "formula": formula, "versus": versus, "keep": keep, "idle": idle,
         "slower": slower, "break_even": break_even, "pass_tokens": pass_tokens, "pool_wins": pool_wins,
         "trees": trees, "bets": bets, "speed": speed}


def for_page(page: str, root: Path) -> list[dict]:
    """Every exercise of the methods on a page (paradec.catalog's order), computed from the files under root
    (the assets folder)."""
    out = []
    for m in catalog.on_page(page):
        for k, e in enumerate(m.exercises):
            t = _load(str(root), e.trace)
            made = KINDS[e.kind](t, e.trace, str(root), e.other) if e.other else KINDS[e.kind](t, e.trace, str(root))
            out.append({"id": f"{m.name}.{k + 1}", **made})
    return out


def check(exercise: dict, given) -> bool:
    """Whether `given` (what the learner typed or picked) answers the exercise: a number (a decimal comma
    allowed) within its tolerance, or the right choice's index."""
    if exercise["kind"] == "choice":
        return given == exercise["answer"] or str(given).strip() == str(exercise["answer"])
    try:
        x = float(str(given).strip()[:MAX_ANSWER].replace(",", "."))
    except ValueError:
        return False
    return math.isfinite(x) and abs(x - exercise["answer"]) <= exercise["tolerance"] + 1e-9
