"""One step told in words, so a learner can follow it without reading code."""
from __future__ import annotations

from paradec.plots.tokens import label
from paradec.plots.tree import pending_token
from paradec.trace import Node, Trace

LAST = {
    "bonus": "every draft token passed, so the same pass also gives a free **bonus** token",
    "resampled": "after the rejection the target **resampled** from the residual",
    "target": "the target picked its own token",
}


def _q(trace: Trace, tok: int) -> str:
    return f"`{label(trace.text_of(tok))}`"


def step_story(trace: Trace, i: int) -> str:
    s = trace.steps[i]
    pend = _q(trace, pending_token(trace, i))
    if not s.nodes:
        window = len(s.extras.get("window_sees", []))  # Lookahead's window rides along, never a candidate
        ride = f" (with {window} window tokens riding along)" if window else ""
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
