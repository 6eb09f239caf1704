"""Speculative sampling with a draft model (Leviathan et al. 2023; Chen et al. 2023).

The draft q proposes a chain of k tokens autoregressively; the verifier accepts each with
min(1, p/q). The draft length k is fixed, follows the +2/-1 heuristic (grow after a fully
accepted draft, shrink after a rejection), or stops early when q's confidence drops."""
from __future__ import annotations

import torch
from transformers import DynamicCache

from .base import Draft, Drafter

SCHEDULES = ("fixed", "heuristic", "confidence")
MAX_K = 16  # the heuristic never drafts more than this


class SpeculativeSampling(Drafter):
    name = "sps"

    def __init__(self, draft_model, k: int = 4, draft_length: str = "fixed", threshold: float = 0.4):
        if draft_length not in SCHEDULES:
            raise ValueError(f"draft_length must be one of {', '.join(SCHEDULES)}")
        if not 1 <= k <= MAX_K:
            raise ValueError(f"k must be between 1 and {MAX_K}")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError("threshold must be between 0 and 1")
        self.model = draft_model  # shared, read-only
        self.params = {"k": k, "draft_length": draft_length, "threshold": threshold}

    def begin(self, prompt_ids):
        self.cache = DynamicCache()  # the draft's own cache, for this run only
        self.k = self.params["k"]

    @torch.inference_mode()
    def propose(self, ctx, sampler, gen) -> Draft:
        cached = self.cache.get_seq_length()
        feed = ctx[cached:]  # committed tokens the draft has not seen yet (>= 1)
        tokens, qs = [], []
        for _ in range(self.k):
            ids = torch.tensor([feed], device=self.model.device)
            logits = self.model(input_ids=ids, cache=self.cache, use_cache=True, logits_to_keep=1).logits[0, -1]
            q = sampler.probs(logits)
            tok = sampler.pick(q, gen)
            tokens.append(tok)
            qs.append(q)
            feed = [tok]
            if self.params["draft_length"] == "confidence" and float(q.max()) < self.params["threshold"]:
                break
        parents = list(range(-1, len(tokens) - 1))
        return Draft(tokens=tokens, parents=parents, q=qs, forwards=len(tokens), extras={"k": self.k})

    def commit(self, ctx, draft, accepted, verified):
        # The draft cache holds the drafted tokens but the last; keep those that were accepted.
        valid = len(ctx) - 1 - len(accepted) + min(len(accepted), len(draft.tokens) - 1)
        extra = self.cache.get_seq_length() - valid
        if extra > 0:
            self.cache.crop(-extra)
        if self.params["draft_length"] == "heuristic":
            full = len(accepted) == len(draft.tokens)
            self.k = min(MAX_K, self.k + 2) if full else max(1, self.k - 1)
