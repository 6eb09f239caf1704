"""The types a decode step is made of: what a drafter proposes (Draft), what the verify pass gives back
to it (Verified), and what the step records (Node, Step). Step and Node import only the standard library,
so a recorded trace replays with no torch."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .records import Record

if TYPE_CHECKING:
    import torch


@dataclass
class Node:
    """One drafted token. parent = -1 means the node hangs off the pending (last committed) token."""

    token: int
    parent: int
    depth: int
    q: float | None = None  # draft probability of this token (None: a deterministic proposal)
    q_top: list = field(default_factory=list)  # [[token, prob], ...] of the draft distribution (+ p_top's tokens)
    p: float | None = None  # target probability of this token, given its ancestors
    p_top: list = field(default_factory=list)  # [[token, prob], ...] of that target distribution (+ q_top's tokens)
    accept_prob: float | None = None  # min(1, p/q) when the node was tested by sampling
    u: float | None = None  # the uniform draw compared with accept_prob
    status: str = "unreached"  # accepted | rejected | unreached (trace_check.STATUSES)


@dataclass
class Step:
    """One propose -> verify -> accept -> commit round."""

    index: int
    context_len: int  # tokens committed before this step (prompt + generated)
    nodes: list[Node]
    accepted: list[int]  # node indices of the accepted path, root first
    tokens: list[int]  # tokens committed this step: accepted drafts then the last token
    origins: list[str]  # one of trace_check.ORIGINS per committed token
    last_p_top: list = field(default_factory=list)  # target top-k where the last token was drawn
    residual_top: list | None = None  # top-k of norm(max(0, p - q)) when the last token was resampled
    target_forwards: int = 1
    draft_forwards: int = 0
    verified: int = 1  # tokens in the verify pass (the pending token plus every node)
    draft_ms: float = 0.0  # propose(): the drafter's work before the verify pass
    verify_ms: float = 0.0  # the verify pass, acceptance, the KV cache's compaction and the drafter's commit()
    start_ms: float = 0.0  # when propose() began, from the start of the run (the timeline's clock)
    record: Record | None = None  # the method's own part (paradec.core.records; None: a method without one)


@dataclass
class Draft:
    """What propose() returns: a tree of proposed tokens (a chain is a tree with one branch)."""

    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)  # -1 = child of the pending token
    # q[i]: the draft distribution node i's token was drawn from (shape (vocab,)),
    # or None when the proposal was deterministic (prompt lookup): then q is one-hot.
    q: list[torch.Tensor | None] = field(default_factory=list)
    # Lookahead-style window: tokens fed in the same target pass but never accepted; the
    # drafter reads their logits back in commit(). window_pos: position offsets from the
    # pending token; window_sees[i]: block indices window token i attends to besides the
    # context (0 = pending token, 1..N = nodes, N+1.. = window tokens, itself included).
    window: list[int] = field(default_factory=list)
    window_pos: list[int] = field(default_factory=list)
    window_sees: list[list[int]] = field(default_factory=list)
    # Medusa-2's typical acceptance (epsilon, delta), or None for exact acceptance. LOSSY when
    # sampling: a node passes when p(token) > min(epsilon, delta * exp(-H(p))), no rejection sampling.
    typical: tuple[float, float] | None = None
    forwards: int = 0  # draft-model forward passes spent on this proposal
    record: Record | None = None  # the step's own record as propose() knew it (paradec.core.records), frozen


@dataclass
class Verified:
    """What the verify pass gives back to the drafter: rows for the pending token, the nodes
    and the window, in that order."""

    logits: torch.Tensor  # (1+N+W, V)
    hidden: torch.Tensor | None = None  # (len(hidden_layers), 1+N+W, H) when the drafter asks
    # (len(hidden_layers), U-1, H): the uncached tokens before the pending one (the prompt, on the
    # first step), for drafters that keep a feature per context position (EAGLE); None when U = 1.
    prefix_hidden: torch.Tensor | None = None
