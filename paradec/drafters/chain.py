"""The chain drafters' common shape: a draft that writes one token at a time (sps's draft model, early exit's
shallow sub-network, mirror's draft on its worker thread). The base owns the draft-length rule, the draft's
KV cache and its crop; a chain drafter writes only `new_cache()` and `logits_after(tokens)`: the draft's
logits after feeding it those tokens (its cache then holds them).

The cache is cropped when the next chain starts, to what it shares with that chain's prefix: after a
verify pass that is the accepted part of the last chain (sps, early exit), and on mirror's worker it is
whatever the outcome being bet on shares with the chain the cache was last fed."""
from __future__ import annotations

import torch

from .. import catalog
from ..core.drafter import Drafter
from ..core.steps import Draft
from ..core.tree import chain_parents
from . import draft_length as lengths


class ChainDrafter(Drafter):
    """Draft up to k tokens a step, as long as the rule says, from the draft's own logits."""

    def __init__(self, k: int, draft_length: str, threshold: float, stop_file=None):
        # The learned rule reads a trained draft's own predictor where it has one (paradec.models.draft_model).
        self.schedule = lengths.Schedule(draft_length, k, threshold, stop_file=stop_file)

    def new_cache(self):
        """The draft's own KV cache, for one run."""
        raise NotImplementedError

    def logits_after(self, tokens: list[int]) -> torch.Tensor:
        """(V,) logits at the last of tokens, fed after what self.cache holds."""
        raise NotImplementedError

    def record_fields(self) -> dict:
        """What a step's record (the method's, paradec.catalog) says beside the rule's numbers."""
        return {}

    def begin(self, prompt_ids):
        self.cache = self.new_cache()
        self.fed: list[int] = []  # the tokens whose keys and values the cache holds, in order
        self.rule = self.schedule.rule()

    @torch.inference_mode()
    def propose(self, ctx, sampler, gen) -> Draft:
        tokens, qs = self.chain(ctx, sampler, gen)
        record = self.rule.record(len(tokens), catalog.method(self.name).record, **self.record_fields())
        return Draft(tokens=tokens, parents=chain_parents(len(tokens)), q=qs, forwards=len(tokens), record=record)

    def chain(self, prefix: list[int], sampler, gen, go_on=lambda: True) -> tuple[list[int], list[torch.Tensor]]:
        """A chain after prefix, as long as the rule (and go_on()) says: the cache keeps what it shares
        with prefix and is fed the rest (at least the last token). -> the tokens, the q each came from."""
        valid = min(_common(self.fed, prefix), len(prefix) - 1)
        if len(self.fed) > valid:
            self.cache.crop(valid - len(self.fed))  # a negative count: tokens to drop
            del self.fed[valid:]
        tokens, qs = lengths.chain(lambda pos, q: self.rule.continue_after(pos, q) and go_on(), self.logits_after,
                                   prefix[valid:], sampler, gen)
        self.fed += prefix[valid:] + tokens[:-1]  # the last token drawn is not fed yet
        return tokens, qs

    def commit(self, ctx, draft, accepted, verified):
        self.rule.update(len(accepted), len(draft.tokens))


def _common(a: list[int], b: list[int]) -> int:
    """Length of the common prefix of two token lists."""
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)
