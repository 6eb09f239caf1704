"""Predict questions: before a page reveals a step's verify pass, it asks one question drawn from that step's
record, of a kind its method declares (paradec.catalog: Method.questions). Each kind is a function of the trace
and the step that returns a question, or None when the step gives it nothing to ask (nothing drafted, a single
branch, no sampled test). A question is plain JSON:

    text     the question, [template, values]; every template starts with "Predict"
    choices  the answers offered, each [template, values]
    answer   the index of the right one
    why      one sentence, computed from the record, that says what happened and why
    node     the drafted node the reveal highlights in the tree and the mask (None: none)
    pick     for a tree, each node's choice (a learner may answer by picking a node in the drawn tree)
    terms    the glossary's terms the question uses

veiled(trace, i) is the same trace with step i as its drafter proposed it, before the target verified anything:
what the page shows while it waits for the answer."""
from __future__ import annotations

from dataclasses import replace

from .. import catalog
from ..core.steps import Node, Step
from ..plots.tokens import label
from ..plots.tree import pending_token
from ..traces.trace import Trace
from . import N_, Text, say

DRAFTED = "drafted"  # a veiled node's status: proposed, not yet verified
MAX_BRANCHES = 8  # a tree with more first-depth candidates asks how deep, not which branch
SAME = 1e-3  # a recorded acceptance probability is min(1, p/q) when this close (a tree's siblings use another rule)


def tok(trace: Trace, token: int) -> str:
    return label(trace.text_of(token))


def _rejected(s: Step) -> int | None:
    """The node the target turned down where its own token went (the first rejected child of the path's end)."""
    parent = s.accepted[-1] if s.accepted else -1
    return next((j for j, n in enumerate(s.nodes) if n.status == "rejected" and n.parent == parent), None)


def _path(trace: Trace, s: Step) -> str:
    return " ".join(tok(trace, s.nodes[j].token) for j in s.accepted)


def accepted(trace: Trace, i: int, text: str = "") -> dict | None:
    """How many drafted tokens the target accepts (a chain's length kept, a tree's accepted depth)."""
    s = trace.steps[i]
    if not s.nodes or not s.tokens or s.origins[-1] == "accepted":  # the budget ended the step on a draft
        return None
    deepest = max(n.depth for n in s.nodes)
    values = {"drafted": len(s.nodes), "pending": tok(trace, pending_token(trace, i))}
    question = say(text or N_("Predict: how many of the {drafted} drafted tokens will the target accept?"), **values)
    bad = _rejected(s)
    return {"kind": "accepted", "text": question, "choices": [say("{n}", n=k) for k in range(deepest + 1)],
            "answer": len(s.accepted), "why": _accepted_why(trace, s, bad), "pick": None,
            "node": s.accepted[-1] if s.accepted else bad, "terms": ["draft tokens", "bonus token", "acceptance rate"]}


def _accepted_why(trace: Trace, s: Step, bad: int | None) -> Text:
    own, n = tok(trace, s.tokens[-1]), len(s.tokens)
    if s.origins[-1] == "bonus":
        return say(N_("The target accepted all {accepted} drafted tokens on its path (`{path}`) and added a bonus "
                      "token, `{token}`: {n} tokens for one forward."), accepted=len(s.accepted),
                   path=_path(trace, s), token=own, n=n)
    p = s.nodes[bad].p if bad is not None else None
    if not s.accepted:
        if p is None:
            return say(N_("The target accepted none: its own token `{token}` came first. 1 token for this "
                          "forward."), token=own)
        return say(N_("The target rejected the first drafted token, `{first}` (p = {p:.2f} under the target); its "
                      "own token `{token}` took its place: 1 token for this forward."),
                   first=tok(trace, s.nodes[bad].token), p=p, token=own)
    if p is None:
        return say(N_("The target accepted {accepted} (`{path}`), then wrote its own token `{token}`: {n} tokens "
                      "for one forward."), accepted=len(s.accepted), path=_path(trace, s), token=own, n=n)
    return say(N_("The target accepted {accepted} (`{path}`); the next draft, `{rejected}`, had p = {p:.2f} under "
                  "the target, and its own token `{token}` replaced it: {n} tokens for one forward."),
               accepted=len(s.accepted), path=_path(trace, s), rejected=tok(trace, s.nodes[bad].token), p=p,
               token=own, n=n)


def branch(trace: Trace, i: int, text: str = "") -> dict | None:
    """Which first-depth candidate of a tree the target keeps (or none)."""
    s = trace.steps[i]
    roots = [j for j, n in enumerate(s.nodes) if n.parent < 0]
    if not 2 <= len(roots) <= MAX_BRANCHES or not s.tokens:
        return None
    top = {}  # node -> the first-depth candidate it hangs under
    for j, n in enumerate(s.nodes):  # parents come before their children
        top[j] = j if n.parent < 0 else top[n.parent]
    choices = [say("`{token}`", token=tok(trace, s.nodes[j].token)) for j in roots]
    choices.append(say(N_("none of them")))
    pending, own = tok(trace, pending_token(trace, i)), tok(trace, s.tokens[-1])
    question = say(text or N_("Predict: which of the {n} first tokens after `{pending}` will the target keep? (Pick "
                              "one, or a node of its branch in the tree.)"), n=len(roots), pending=pending)
    if s.accepted:
        answer = roots.index(s.accepted[0])
        why = say(N_("The target kept the branch of `{first}` and went {depth} deep along it (`{path}`); its own "
                     "token `{token}` came after: {n} tokens for one forward."), first=choices[answer][1]["token"],
                  depth=len(s.accepted), path=_path(trace, s), token=own, n=len(s.tokens))
    else:
        answer = len(roots)
        why = say(N_("The target kept none of the {n} branches: its own token after `{pending}` was `{token}`, and "
                     "every first candidate failed its test."), n=len(roots), pending=pending, token=own)
    return {"kind": "branch", "text": question, "choices": choices, "answer": answer, "why": why,
            "pick": [roots.index(top[j]) for j in range(len(s.nodes))],
            "node": s.accepted[-1] if s.accepted else None, "terms": ["branch", "tree attention", "root"]}


def _tested(s: Step) -> int | None:
    """The node whose sampled test decided the step (the rejected one, else the deepest accepted), when its
    recorded probability is rejection sampling's min(1, p/q)."""
    bad = _rejected(s)
    j = bad if bad is not None else (s.accepted[-1] if s.accepted else None)
    n = s.nodes[j] if j is not None else None
    if n is None or None in (n.accept_prob, n.p, n.q, n.u) or not n.q > 0:
        return None
    return j if abs(n.accept_prob - min(1.0, n.p / n.q)) < SAME else None


def keep(trace: Trace, i: int, text: str = "") -> dict | None:
    """The microscope's question: given q and p of a sampled draft token, the chance the target keeps it."""
    s = trace.steps[i]
    j = _tested(s) if s.nodes else None
    if j is None:
        return None
    n: Node = s.nodes[j]
    right = round(n.accept_prob, 2)
    offered = sorted({right, *(round(x, 2) for x in (n.p, n.q, 1 - n.accept_prob, n.p * n.q))})
    if len(offered) < 3:
        return None
    kept = n.status == "accepted"
    why = say(N_("Kept with probability min(1, p/q) = {prob:.2f}; the uniform draw was u = {u:.2f}, below it, so "
                 "`{token}` was accepted.") if kept else
              N_("Kept with probability min(1, p/q) = {prob:.2f}; the uniform draw was u = {u:.2f}, not below it, "
                 "so `{token}` was rejected and the target resampled from the residual."),
              prob=n.accept_prob, u=n.u, token=tok(trace, n.token))
    question = say(text or N_("Predict: the draft gave `{token}` q = {q:.3f}, the target p = {p:.3f}. With what "
                              "probability does the target keep it?"), token=tok(trace, n.token), q=n.q, p=n.p)
    return {"kind": "keep", "text": question, "choices": [say("{x:.2f}", x=x) for x in offered],
            "answer": offered.index(right), "why": why, "pick": None, "node": j, "terms": ["rejection sampling"]}


def bet(trace: Trace, i: int, text: str = "") -> dict | None:
    """Parallel draft-and-verify: whether this step's chain was drafted ahead, during the last verify pass."""
    rec = trace.steps[i].record
    if getattr(rec, "hit", None) is None or len(rec.outcome) != 2:
        return None
    j, b = rec.outcome
    done = [x for x in rec.bets if len(x) == 4 and x[3]]
    question = say(text or N_("Predict: while the target verified the last step, the worker drafted ahead for its "
                              "likeliest outcomes. Did one of its bets pay, so that this chain was ready?"))
    values = {"j": j, "token": tok(trace, b), "bets": len(done)}
    if rec.hit:
        why = say(N_("The last pass accepted {j} drafted token(s) and then wrote `{token}`: one of the worker's {bets} "
                     "finished bets, so this chain was drafted while the target verified."), **values)
    elif rec.bets:
        best = rec.bets[0]
        why = say(N_("The last pass accepted {j} drafted token(s) and then wrote `{token}`: none of the worker's "
                     "{bets} finished bets (its best: {best_j} and `{best_token}`, chance {chance:.2f}), so this "
                     "chain was drafted now."), **values, best_j=best[0], best_token=tok(trace, int(best[1])),
                  chance=best[2])
    else:
        why = say(N_("The last pass accepted {j} drafted token(s) and then wrote `{token}`: the worker had no bet "
                     "ready, so this chain was drafted now."), **values)
    return {"kind": "bet", "text": question, "choices": [say(N_("yes, it was drafted ahead")),
                                                         say(N_("no, it is drafted now"))],
            "answer": 0 if rec.hit else 1, "why": why, "pick": None, "node": None, "terms": ["Mirror-SD"]}


KINDS = {"accepted": accepted, "branch": branch, "keep": keep, "bet": bet}


def ask(trace: Trace, i: int) -> dict | None:
    """The question step i asks, or None: of the method's kinds that apply to the step, one in turn (the step's
    index picks), so that a page's questions vary as it plays."""
    method = catalog.METHODS.get(trace.method)
    found = [q for a in (method.questions if method else ()) if (q := KINDS[a.kind](trace, i, a.text))]
    return found[i % len(found)] if found else None


def veiled(trace: Trace, i: int) -> Trace:
    """The trace with step i as proposed: its nodes drafted but untested (no p, no draw), nothing committed."""
    s = trace.steps[i]
    nodes = [replace(n, p=None, p_top=[], accept_prob=None, u=None, status=DRAFTED) for n in s.nodes]
    steps = list(trace.steps)
    steps[i] = replace(s, nodes=nodes, accepted=[], tokens=[], origins=[], last_p_top=[], residual_top=None)
    return replace(trace, steps=steps)
