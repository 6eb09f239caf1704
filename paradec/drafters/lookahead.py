"""Lookahead decoding (Fu et al., 2024): Jacobi iterations on a 2D window feed an n-gram
pool; candidate n-grams from the pool are verified in the same forward pass.

The window has N-1 levels of W tokens. Column i of level j sits at position offset i+j
and attends to level 0 up to column i and to column i of the levels above it: one
trajectory of consecutive positions. The last level's predictions close one n-gram per
column (read down the column, plus the prediction) and become the next level. The
pool is keyed by an n-gram's first token; the up-to-G n-grams that start with the
pending token are merged into a tree and verified. Proposals are deterministic, so
sampling accepts a candidate with its target probability, or removes it and renormalises."""
from __future__ import annotations

from dataclasses import replace

import torch

from ..core import records
from ..core.drafter import Drafter
from ..core.steps import Draft


class Lookahead(Drafter):
    name = "lookahead"

    def __init__(self, *, window: int, ngram: int, candidates: int):
        self.params = dict(window=window, ngram=ngram, candidates=candidates)

    def begin(self, prompt_ids):
        self.levels: list[list[int]] = []  # N-1 levels of W tokens; levels[0][0] is the pending token
        self.pool: dict[int, list[tuple[int, ...]]] = {}  # first token -> continuations, newest first

    def propose(self, ctx, sampler, gen) -> Draft:
        w, n, g = self.params["window"], self.params["ngram"], self.params["candidates"]
        if not self.levels:  # start the trajectories from random context tokens (seeded)
            idx = torch.randint(len(ctx), ((n - 1) * w,), generator=gen).tolist()
            self.levels = [[ctx[i] for i in idx[j * w : (j + 1) * w]] for j in range(n - 1)]
        self.levels[0][0] = ctx[-1]
        cands = self.pool.get(ctx[-1], [])[:g]
        tokens, parents = _trie(cands)
        window, pos, sees = self._window(len(tokens))
        # The window's positions and attention go into the trace too, so the app can draw the
        # combined mask (verification + lookahead rows) from the trace alone, without torch.
        record = records.Lookahead(levels=[list(level) for level in self.levels], candidates=[list(c) for c in cands],
                                   window_pos=pos, window_sees=sees)
        return Draft(tokens=tokens, parents=parents, window=window, window_pos=pos, window_sees=sees, record=record)

    def _window(self, n_nodes: int):
        """Window tokens (level 0 without its column 0, which is the pending token, then the
        other levels), their position offsets, and the block indices each one attends to."""
        w, levels = self.params["window"], self.levels
        index = {(0, 0): 0}  # (level, column) -> index in the verify block
        tokens, pos, sees = [], [], []
        for j, level in enumerate(levels):
            for i in range(1 if j == 0 else 0, w):
                index[(j, i)] = 1 + n_nodes + len(tokens)
                tokens.append(level[i])
                pos.append(i + j)
                sees.append([index[(0, c)] for c in range(i + 1)] + [index[(k, i)] for k in range(1, j + 1)])
        self._rows = [index[(len(levels) - 1, i)] for i in range(w)]  # rows predicting the next level
        return tokens, pos, sees

    def commit(self, ctx, draft, accepted, verified):
        new = torch.argmax(verified.logits[self._rows], dim=-1).tolist()
        grams = [tuple(level[i] for level in self.levels) + (new[i],) for i in range(self.params["window"])]
        for gram in grams:
            bucket = self.pool.setdefault(gram[0], [])
            if gram[1:] in bucket:
                bucket.remove(gram[1:])
            bucket.insert(0, gram[1:])
            del bucket[max(1, self.params["candidates"]) :]
        self.added = [list(x) for x in grams]
        self.levels = self.levels[1:] + [new]

    def record(self, draft, outcome):
        """The window proposed, with the n-grams this step's commit added to the pool."""
        return replace(draft.record, added=self.added)


def _trie(cands: list[tuple[int, ...]]) -> tuple[list[int], list[int]]:
    """Merge candidate n-grams that share a prefix into one tree (tokens, parents)."""
    tokens, parents, node = [], [], {}
    for cand in cands:
        parent = -1
        for tok in cand:
            key = (parent, tok)
            if key not in node:
                node[key] = len(tokens)
                tokens.append(tok)
                parents.append(parent)
            parent = node[key]
    return tokens, parents
