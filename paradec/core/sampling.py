"""Turning logits into the distributions p (target) and q (draft), and drawing from them.

The same Sampler is applied to p and q, so temperature, top-k and top-p shape both
alike: rejection sampling is exact only when it compares the distributions that
were really sampled from.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

TOP_K_TRACE = 10  # how many (token, prob) pairs a trace keeps of each distribution


@dataclass(frozen=True)
class Sampler:
    temperature: float = 0.0  # 0 = greedy
    top_k: int = 0  # 0 = off
    top_p: float = 1.0  # 1 = off

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0

    def probs(self, logits: torch.Tensor) -> torch.Tensor:
        """The distribution a token is drawn from; for greedy decoding, the plain softmax."""
        logits = logits.float()
        if self.greedy:
            return torch.softmax(logits, dim=-1)
        logits = logits / self.temperature
        if self.top_k and self.top_k < logits.shape[-1]:
            kth = torch.topk(logits, self.top_k, dim=-1).values[..., -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        probs = torch.softmax(logits, dim=-1)
        if self.top_p < 1.0:
            probs = _nucleus(probs, self.top_p)
        return probs

    def pick(self, probs: torch.Tensor, gen: torch.Generator | None) -> int:
        """Greedy: the argmax. Sampling: a draw from probs with the run's own generator."""
        if self.greedy:
            return int(torch.argmax(probs))
        return int(torch.multinomial(probs, 1, generator=gen))


def _nucleus(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Keep the smallest set of most likely tokens whose mass reaches top_p, renormalised."""
    sorted_p, order = torch.sort(probs, dim=-1, descending=True)
    before = torch.cumsum(sorted_p, dim=-1) - sorted_p  # mass strictly above each token
    sorted_p = sorted_p.masked_fill(before >= top_p, 0.0)
    kept = torch.zeros_like(probs).scatter(-1, order, sorted_p)
    return kept / kept.sum(dim=-1, keepdim=True)


def residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """norm(max(0, p - q)): where to resample after a draft token is rejected."""
    r = torch.clamp(p - q, min=0.0)
    total = r.sum()
    # p == q leaves nothing: rejection then had probability 0, keep p to stay well defined.
    return r / total if total > 0 else p


def pad_to(q: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """q over a draft's smaller embedding table (e.g. Qwen2.5-0.5B's 151,936 rows against the 7B's
    152,064; same tokenizer, the extra rows are padding) -> q over p's ids: 0 where the draft has
    no row, so those ids are never proposed and rejection sampling stays exact."""
    return q if q.shape[-1] == p.shape[-1] else torch.nn.functional.pad(q, (0, p.shape[-1] - q.shape[-1]))


def one_hot(token: int, like: torch.Tensor) -> torch.Tensor:
    """The q of a deterministic proposal (prompt lookup, n-gram pools): all mass on one token."""
    q = torch.zeros_like(like)
    q[token] = 1.0
    return q


def top_list(probs: torch.Tensor, k: int = TOP_K_TRACE) -> list:
    """[[token, prob], ...] of the k most likely tokens, for traces."""
    vals, idx = torch.topk(probs, min(k, probs.shape[-1]))
    return [[i, round(v, 6)] for i, v in zip(idx.tolist(), vals.tolist())]  # lists: a tensor's items cost ~5 us each
