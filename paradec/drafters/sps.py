"""Speculative sampling with a draft model (Leviathan et al. 2023; Chen et al. 2023).

The draft q proposes a chain of up to k tokens autoregressively; the verifier accepts each with
min(1, p/q). How long the chain gets is a rule of paradec.drafters.draft_length: fixed, the
+2/-1 heuristic, a confidence cutoff, or a learned predictor of acceptance."""
from __future__ import annotations

import torch

from ..core.targets import as_target
from .chain import ChainDrafter


class SpeculativeSampling(ChainDrafter):
    name = "sps"

    def __init__(self, draft_model, *, k: int, draft_length: str, threshold: float):
        self.params = dict(k=k, draft_length=draft_length, threshold=threshold)
        super().__init__(k, draft_length, threshold, getattr(draft_model, "stop_file", None))
        self.model = draft_model  # shared, read-only

    def new_cache(self):
        return as_target(self.model).new_cache()

    def logits_after(self, tokens: list[int]) -> torch.Tensor:
        return draft_logits(self.model, self.cache, tokens)


def draft_logits(model, cache, tokens: list[int]) -> torch.Tensor:
    """(V,) the draft's logits after feeding it tokens, at the positions after its cache's entries."""
    start = cache.get_seq_length()
    return as_target(model).forward(cache, tokens, torch.arange(start, start + len(tokens)), None, 1)[0][-1]
