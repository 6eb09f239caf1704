"""Speculative sampling with a draft model (Leviathan et al. 2023; Chen et al. 2023).

The draft q proposes a chain of up to k tokens autoregressively; the verifier accepts each with
min(1, p/q). How long the chain gets is a rule of paradec.drafters.draft_length: fixed, the
+2/-1 heuristic, a confidence cutoff, or a learned predictor of acceptance."""
from __future__ import annotations

import torch

from .. import catalog
from ..targets import as_target
from . import draft_length as lengths  # the parameter draft_length is the rule's name
from .base import Draft, Drafter


class SpeculativeSampling(Drafter):
    name = "sps"

    def __init__(self, draft_model, k: int = 4, draft_length: str = "fixed", threshold: float = 0.4):
        self.params = catalog.check(self.name, k=k, draft_length=draft_length, threshold=threshold)
        self.model = draft_model  # shared, read-only
        # A trained draft carries the predictor fitted on its own acceptance (paradec.draft_model).
        self.schedule = lengths.Schedule(draft_length, k, threshold, stop_file=getattr(draft_model, "stop_file", None))

    def begin(self, prompt_ids):
        self.cache = as_target(self.model).new_cache()  # the draft's own cache, for this run only
        self.rule = self.schedule.rule()

    @torch.inference_mode()
    def propose(self, ctx, sampler, gen) -> Draft:
        tokens, qs = draft_chain(self.model, self.cache, ctx[self.cache.get_seq_length():], sampler, gen,
                                 self.rule.continue_after)
        return Draft(tokens=tokens, parents=list(range(-1, len(tokens) - 1)), q=qs, forwards=len(tokens),
                     extras=self.rule.extras(len(tokens)))

    def commit(self, ctx, draft, accepted, verified):
        lengths.keep_accepted(self.cache, ctx, len(draft.tokens), len(accepted))
        self.rule.update(len(accepted), len(draft.tokens))


def draft_chain(model, cache, feed: list[int], sampler, gen, continue_after) -> tuple[list[int], list[torch.Tensor]]:
    """Draw a chain from the draft: feed the tokens it has not seen (>= 1), draw one, feed it
    back, until continue_after(position, q) says stop. The cache then holds every drawn token
    but the last. Returns the tokens and the q each was drawn from."""

    draft = as_target(model)  # a Hugging Face model, or paradec.fast's forward of one

    def logits_after(tokens: list[int]) -> torch.Tensor:
        start = cache.get_seq_length()
        return draft.forward(cache, tokens, torch.arange(start, start + len(tokens)), None, 1)[0][-1]

    return lengths.chain(continue_after, logits_after, feed, sampler, gen)
