"""Prompt lookup decoding: copy what followed the last n-gram's earlier occurrence.

No draft model: the proposal is a deterministic chain (q is one-hot), which suits
summarisation, extraction and code editing, where the answer repeats the prompt."""
from __future__ import annotations

from ..core import records
from ..core.drafter import Drafter
from ..core.steps import Draft
from ..core.tree import chain_parents

# A step searches the context once per n-gram length (each search O(context x n)) and verifies k + 1
# tokens: unbounded, ngram_max = 4,000 took 27 s a step at 4,000 tokens of context.


class PromptLookup(Drafter):
    name = "pld"

    def __init__(self, *, k: int, ngram_max: int, ngram_min: int):
        self.params = dict(k=k, ngram_max=ngram_max, ngram_min=ngram_min)
        if ngram_min > ngram_max:
            raise ValueError("ngram_min must not exceed ngram_max")
        self.markers: set[int] = set()

    def begin(self, prompt_ids):
        self.markers = turn_markers(prompt_ids)

    def propose(self, ctx, sampler, gen) -> Draft:
        found = lookup(ctx, self.params["k"], self.params["ngram_max"], self.params["ngram_min"], self.markers)
        if found is None:
            return Draft(record=records.Pld())
        follow, n, start = found
        return Draft(tokens=follow, parents=chain_parents(len(follow)),
                     record=records.Pld(ngram=ctx[-n:], match_at=start))


def turn_markers(prompt_ids: list[int]) -> set[int]:
    """The chat template's turn markers: tokens both near the prompt's start and in its last few (ChatML's
    <|im_start|>, Llama 3's <|start_header_id|>). A copy never runs into one, so prompt lookup never drafts
    the template (e.g. `<|im_start|>assistant`)."""
    return set(prompt_ids[:2]) & set(prompt_ids[-6:])


def lookup(ctx: list[int], k: int, ngram_max: int, ngram_min: int, markers: set[int]):
    """-> (up to k tokens that followed the latest earlier occurrence of ctx's last n tokens, n, where that
    occurrence starts), the longest n first; None when no n-gram in [ngram_min, ngram_max] recurs."""
    for n in range(min(ngram_max, len(ctx) - 1), ngram_min - 1, -1):
        for start in _matches(ctx, n):
            follow = _until(ctx[start + n : start + n + k], markers)
            if follow:
                return follow, n, start
    return None


def _matches(ctx: list[int], n: int):
    """Starts of the earlier occurrences of ctx's last n tokens that have a continuation, latest first."""
    tail = ctx[-n:]
    for s in range(len(ctx) - n - 1, -1, -1):
        if ctx[s : s + n] == tail:
            yield s


def _until(tokens: list[int], stop: set[int]) -> list[int]:
    return tokens[: next((j for j, t in enumerate(tokens) if t in stop), len(tokens))]
