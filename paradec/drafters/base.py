"""The one drafter interface: every method is a Drafter, the decode loop never asks which.

A drafter object belongs to one run (it may hold a KV cache of its own); the models it
reads are shared and never modified.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..records import Record
from ..sampling import Sampler


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
    record: Record | None = None  # the step's own record as propose() knew it (paradec.records), frozen


@dataclass
class Verified:
    """What the verify pass gives back to the drafter: rows for the pending token, the nodes
    and the window, in that order."""

    logits: torch.Tensor  # (1+N+W, V)
    hidden: torch.Tensor | None = None  # (len(hidden_layers), 1+N+W, H) when the drafter asks
    # (len(hidden_layers), U-1, H): the uncached tokens before the pending one (the prompt, on the
    # first step), for drafters that keep a feature per context position (EAGLE); None when U = 1.
    prefix_hidden: torch.Tensor | None = None


class Drafter:
    """Proposes nothing: with this drafter the loop is plain autoregressive decoding."""

    name = "ar"
    # Target layers whose hidden states the drafter reads after each verify pass (Medusa and
    # EAGLE draft from the target's features): indices into the model's hidden_states tuple,
    # -1 = the final, normed layer. Empty: none are returned.
    hidden_layers: tuple[int, ...] = ()

    def __init__(self):
        self.params: dict = {}  # the method's parameters, as given (recorded in traces)

    @staticmethod
    def lossy(params: dict) -> str:
        """Why these parameters make sampling lossy (the output distribution is not exactly
        the target's), or "" when they do not. The CLI warns; traces and pages label it."""
        return ""

    @staticmethod
    def target_deltas(params: dict) -> str | None:
        """The folder of LoRA deltas this method decodes with (a fine-tuned copy of the target,
        made by paradec.lora.target_for; the class then names it in `label` and says how to train
        the deltas in `train_command`), or None: it decodes on the target as loaded."""
        return None

    def begin(self, prompt_ids: list[int]) -> None:
        """A new run starts from these prompt tokens."""

    def propose(self, ctx: list[int], sampler: Sampler, gen: torch.Generator | None) -> Draft:
        """ctx = every committed token, the pending one (ctx[-1]) included."""
        return Draft()

    def commit(self, ctx: list[int], draft: Draft, accepted: list[int], verified: Verified) -> None:
        """Feedback after a step: ctx now holds the newly committed tokens too; accepted lists
        the node indices of the accepted path; verified holds the verify pass's outputs."""

    def record(self, draft: Draft, outcome) -> Record | None:
        """The step's record, asked once after commit(): draft.record, or, for a drafter that learns
        more in the verify pass (what commit added, what acceptance decided: outcome, a
        paradec.verify.Outcome), a completed copy of it. Records are frozen: never changed in place."""
        return draft.record


def first_line(e: Exception, limit: int = 200) -> str:
    """An error's first line, cut short: a reader's message may go on to list a file's tensors."""
    if isinstance(e, KeyError):  # str() of a KeyError is just the key
        return f"no {str(e)[:limit]} in it: not a file of this kind"
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:limit]
