"""Where a method's page opens: a recorded run and a step that shows the method at work, found by the rule its
description names (paradec.catalog: Method.opens_on, Method.opening), not chosen by hand. No streamlit, no torch."""
from __future__ import annotations

from collections.abc import Callable

from ..core.steps import Step


def _chain(s: Step) -> bool:
    """Several tokens drafted, some accepted and one rejected: the draft-then-verify cycle whole."""
    rejected = sum(n.status == "rejected" for n in s.nodes)
    return len(s.nodes) >= 2 and len(s.accepted) >= 1 and rejected >= 1


def _tree(s: Step) -> bool:
    """A branch that wins over a sibling: an accepted node beside a rejected one under the same parent."""
    accepted = {s.nodes[a].parent for a in s.accepted}
    return any(n.status == "rejected" and n.parent in accepted for n in s.nodes) and _chain(s)


def _block(s: Step) -> bool:
    """A pass that fixes more than the one token every pass commits."""
    return len(s.tokens) >= 2


def _window(s: Step) -> bool:
    """An n-gram from the pool accepted in the pass that also grows the window."""
    return len(s.accepted) >= 2


RULES: dict[str, Callable[[Step], bool]] = {"chain": _chain, "tree": _tree, "block": _block, "window": _window,
                                            "any": lambda s: True}


def step(rule: str, steps: list[Step]) -> int | None:
    """The first step (0-based) the rule finds, the prefill left out when another step qualifies; None: none."""
    found = [k for k, s in enumerate(steps) if RULES[rule](s)]
    later = [k for k in found if k > 0]
    return (later or found or [None])[0]


def run(rule: str, preferred: tuple[str, ...], runs: dict) -> tuple[str, int] | None:
    """(run name, step) to open on among runs (name -> its steps): the first preferred run the rule finds a step in,
    else any run it does, in name order; None when the rule finds nothing anywhere."""
    order = [*(n for n in preferred if n in runs), *sorted(n for n in runs if n not in preferred)]
    for name in order:
        k = step(rule, runs[name])
        if k is not None:
            return name, k
    return None
