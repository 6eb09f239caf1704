"""The chain drafters' common shape: a draft that writes one token at a time (sps's draft model, early exit's
shallow sub-network). The base owns the draft-length rule, the draft's KV cache and its crop after each
verify pass; a chain drafter writes only `new_cache()` and `logits_after(tokens)`: the draft's logits after
feeding it those tokens (its cache then holds them)."""
from __future__ import annotations

import torch

from . import draft_length as lengths  # the parameter draft_length is the rule's name
from .base import Draft, Drafter


def chain_parents(n: int) -> list[int]:
    """A chain as a tree: node i hangs off node i - 1, the first off the pending token."""
    return list(range(-1, n - 1))


class ChainDrafter(Drafter):
    """Draft up to k tokens a step, as long as the rule says, from the draft's own logits."""

    def __init__(self, k: int, draft_length: str, threshold: float, stop_file=None):
        # The learned rule reads a trained draft's own predictor where it has one (paradec.draft_model).
        self.schedule = lengths.Schedule(draft_length, k, threshold, stop_file=stop_file)

    def new_cache(self):
        """The draft's own KV cache, for one run."""
        raise NotImplementedError

    def logits_after(self, tokens: list[int]) -> torch.Tensor:
        """(V,) logits at the last of tokens, fed after what self.cache holds."""
        raise NotImplementedError

    def extras(self) -> dict:
        """What a step's record says beside the rule's numbers."""
        return {}

    def begin(self, prompt_ids):
        self.cache = self.new_cache()
        self.rule = self.schedule.rule()

    @torch.inference_mode()
    def propose(self, ctx, sampler, gen) -> Draft:
        feed = ctx[self.cache.get_seq_length():]  # committed tokens the draft has not seen yet (>= 1)
        tokens, qs = lengths.chain(self.rule.continue_after, self.logits_after, feed, sampler, gen)
        return Draft(tokens=tokens, parents=chain_parents(len(tokens)), q=qs, forwards=len(tokens),
                     extras={**self.extras(), **self.rule.extras(len(tokens))})

    def commit(self, ctx, draft, accepted, verified):
        lengths.keep_accepted(self.cache, ctx, len(draft.tokens), len(accepted))
        self.rule.update(len(accepted), len(draft.tokens))
