"""Jacobi decoding: guess a block of future tokens, let the target re-predict all of them
in one pass, keep the prefix that reached its fixed point, iterate.

Each step is one Jacobi iteration: the block is verified as a chain (a guess is fixed
when it equals the target's argmax after the tokens before it), so at least one token is
committed per pass and greedy output equals AR's exactly. The target's predictions at
the positions that did not converge become the next iteration's guesses."""
from __future__ import annotations

import torch

from ..core import records
from ..core.drafter import Drafter
from ..core.steps import Draft
from ..core.tree import chain_parents


class Jacobi(Drafter):
    name = "jacobi"

    def __init__(self, *, block: int, init: str):
        self.params = dict(block=block, init=init)

    def begin(self, prompt_ids):
        self.guess: list[int] = []  # the current iteration's guesses for the positions after ctx
        self.previous: list[int] = []  # last iteration's guesses at the same positions

    def propose(self, ctx, sampler, gen) -> Draft:
        n = self.params["block"]
        block = self.guess[:n] + self._fill(ctx, n - len(self.guess[:n]), gen)
        changed = [i >= len(self.previous) or block[i] != self.previous[i] for i in range(n)]
        self.guess = block
        return Draft(tokens=block, parents=chain_parents(n), record=records.Jacobi(block=list(block), changed=changed))

    def commit(self, ctx, draft, accepted, verified):
        # Row i+1 predicts the token after guess i: for positions past the committed ones these
        # predictions (made from a partly wrong prefix) are the next iteration's guesses.
        m = len(accepted)
        self.previous = draft.tokens[m + 1 :]
        self.guess = torch.argmax(verified.logits[m + 1 : len(draft.tokens) + 1], dim=-1).tolist()

    def _fill(self, ctx: list[int], k: int, gen) -> list[int]:
        if k <= 0:
            return []
        init = self.params["init"]
        if init == "random":  # random tokens of the context, drawn from the run's generator
            idx = torch.randint(len(ctx), (k,), generator=gen).tolist()
            return [ctx[i] for i in idx]
        return [ctx[-1] if init == "repeat" else 0] * k
