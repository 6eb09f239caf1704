"""What a drafter reads of its target: one narrow interface that the float32 Hugging Face model and the 4-bit GGUF
engine (paradec.cpu.quant.QuantModel) both offer, so that every method runs on either.

    config          the model's configuration (hidden_size, vocab_size, num_hidden_layers, ...)
    device, dtype   where, and in what, a drafter's own modules and caches live
    embed(ids)      the input embeddings of token ids -> (..., H)
    head(ids=None)  the LM head's rows for a vocabulary subset (all of them when None): Rows, x -> x rows^T
    norm(h)         the final norm
    prefix(n)       the first n decoder layers: new_cache(), hidden(cache, ids) -> (M, H) before any norm

Drafters take what they are given through as_view(): a view passes through, a Hugging Face model is wrapped.
The shared model is only read: a subset's rows are a copy (packed for the kernel where it runs)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from transformers import DynamicCache

from . import fast


@dataclass(frozen=True)
class Rows:
    """An LM head's rows as a product: rows(x (..., H)) -> (..., n)."""

    n: int
    product: Callable[[torch.Tensor], torch.Tensor]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.product(x)


class FastPrefix:
    """The first `layers` layers of paradec's CPU forward (either precision), on a cache of their own."""

    def __init__(self, target, layers: int):
        self.target, self.layers = target, layers

    def new_cache(self):
        return self.target.new_cache(layers=self.layers)

    def hidden(self, cache, ids: list[int]) -> torch.Tensor:
        return self.target.hidden(cache, ids, self.layers)


class HFPrefix:
    """The first `layers` layers of a Hugging Face model, run by its own modules on a DynamicCache."""

    def __init__(self, model, layers: int):
        self.base, self.layers = model.model, layers

    def new_cache(self):
        return DynamicCache()

    def hidden(self, cache, ids: list[int]) -> torch.Tensor:
        dev = self.base.embed_tokens.weight.device
        start = cache.get_seq_length()
        pos = torch.arange(start, start + len(ids), device=dev)[None]
        h = self.base.embed_tokens(torch.tensor([ids], device=dev))
        mask = causal_mask(len(ids), start + len(ids), h)
        return run_layers(self.base.layers[:self.layers], self.base.rotary_emb, h, pos, mask, cache)[0]


class HFView:
    """A Hugging Face causal LM as drafters read it; fast: its paradec.cpu.fast forward where it has one."""

    def __init__(self, model, fast_target=None):
        self.model, self.fast, self.config = model, fast_target, model.config
        self._lm = model.get_output_embeddings().weight

    @property
    def device(self) -> torch.device:
        return self._lm.device

    @property
    def dtype(self) -> torch.dtype:
        return self._lm.dtype

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model.get_input_embeddings()(ids)

    def head(self, ids: torch.Tensor | None = None) -> Rows:
        if ids is None:  # the whole head: torch's product on the model's own weight, no copy
            lm = self._lm
            return Rows(lm.shape[0], lambda x: x @ lm.T)
        rows = self._lm.index_select(0, ids.to(self._lm.device)).clone()
        product = fast.rows_product(rows)  # the subset's rows packed for the kernel where it runs
        return Rows(rows.shape[0], product or (lambda x: x @ rows.T))

    def norm(self, h: torch.Tensor) -> torch.Tensor:
        return self.model.model.norm(h)

    def prefix(self, layers: int):
        return FastPrefix(self.fast, layers) if self.fast is not None else HFPrefix(self.model, layers)


def as_view(model):
    """A target as drafters read it: a view (paradec.cpu.quant.QuantModel, HFView) passes through, a Hugging Face
    model is wrapped (without paradec's CPU forward: its own modules)."""
    return model if hasattr(model, "prefix") else HFView(model)


def causal_mask(T: int, S: int, like: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
    """Additive (B|1, 1, T, S) mask: T new rows after S - T cached ones, each sees what came before
    it (and `valid` (B, S) keys only, for padded training rows). Additive, not boolean: eager and
    SDPA attention both take it."""
    see = torch.ones(T, S, dtype=torch.bool, device=like.device).tril(S - T)[None, None]
    if valid is not None:
        see = see & valid[:, None, None, :]
    return torch.zeros(see.shape, dtype=like.dtype, device=like.device).masked_fill(~see, torch.finfo(like.dtype).min)


def run_layers(layers, rotary, h: torch.Tensor, pos: torch.Tensor, mask, cache=None) -> torch.Tensor:
    """h (B, T, H) through Hugging Face decoder layers in order (a target's shared ones, an adapter's own)."""
    cos_sin = rotary(h, pos)
    for layer in layers:
        h = layer(h, attention_mask=mask, position_ids=pos, cache=cache, use_cache=cache is not None,
                  position_embeddings=cos_sin)
    return h
