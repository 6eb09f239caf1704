"""What the verifier runs a target through: one interface, two implementations.

A target gives new_cache() (a run's own KV cache, with get_seq_length() and keep(prefix, rows)) and
forward(cache, ids, positions, allowed, keep, hidden_layers) -> (logits (keep, V), hidden states or None).
`allowed` (M, cached + M) is the boolean attention pattern of a tree or a window, None for a chain.
A target may also give forward_many(passes, hidden_layers): several sequences' forwards, each
(cache, ids, positions, allowed, keep) on its own cache, in one pass (batched decoding; the verifier runs
forward once per sequence on a target without it).

- HFTarget: any Hugging Face causal LM, run by its own forward with a DynamicCache and a 4D float mask.
  A 4D mask replaces the model's own, so here it applies the model's sliding window too.
- paradec.cpu.fast.FastTarget: a lean forward of Llama-family models on the CPU (packed weights, a
  preallocated cache); run.py uses it where it applies (paradec.models.Loaded.target)."""
from __future__ import annotations

import torch
from transformers import DynamicCache


class HFCache(DynamicCache):
    """A DynamicCache the verifier can compact."""

    def keep(self, prefix: int, rows: list[int]) -> None:
        """Keep entries 0..prefix-1 and prefix + rows (ascending); drop the rest (the rejected nodes)."""
        if rows == list(range(len(rows))):  # a prefix of the draft: a crop is enough
            extra = self.get_seq_length() - prefix - len(rows)
            if extra:
                self.crop(-extra)
            return
        for layer in self.layers:
            idx = torch.tensor(rows, device=layer.keys.device) + prefix
            layer.keys = torch.cat([layer.keys[..., :prefix, :], layer.keys.index_select(-2, idx)], dim=-2)
            layer.values = torch.cat([layer.values[..., :prefix, :], layer.values.index_select(-2, idx)], dim=-2)


def float_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(1, 1, M, S) additive mask: 0 where allowed, the dtype's minimum elsewhere."""
    return torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)[None, None]


def slide(allowed: torch.Tensor, positions: torch.Tensor, window: int) -> torch.Tensor:
    """The allowed pattern with a sliding window: a query at position i never sees a key at a position
    j <= i - window. The keys are the cached entries (positions 0..C-1) then the queries themselves."""
    queries = positions.cpu()
    keys = torch.cat([torch.arange(allowed.shape[1] - len(queries)), queries])
    return allowed & ((queries[:, None] - keys[None, :]) < window)


class HFTarget:
    """A Hugging Face causal LM as the verifier runs it."""

    def __init__(self, model):
        self.model, self.config = model, model.config

    @property
    def device(self):
        return self.model.device

    @property
    def dtype(self):
        return self.model.dtype

    def new_cache(self) -> HFCache:
        return HFCache()

    def forward(self, cache, ids: list[int], positions: torch.Tensor, allowed: torch.Tensor | None, keep: int,
                hidden_layers: tuple[int, ...] = ()):
        device = self.model.device
        out = self.model(input_ids=torch.tensor([ids], device=device), position_ids=positions[None].to(device),
                         attention_mask=None if allowed is None else self._masks(allowed, positions), cache=cache,
                         use_cache=True, logits_to_keep=keep, output_hidden_states=bool(hidden_layers))
        hidden = torch.stack([out.hidden_states[i][0] for i in hidden_layers]) if hidden_layers else None
        return out.logits[0], hidden

    def _masks(self, allowed: torch.Tensor, positions: torch.Tensor):
        """The 4D mask, or for a model that mixes full and sliding-window layers one per layer type (the
        dict Hugging Face's Gemma-2/3 and Qwen2 take). A chain needs none: the model builds its own."""
        window = getattr(self.config, "sliding_window", None)
        kinds = set(getattr(self.config, "layer_types", None) or ())

        def build(a):
            return float_mask(a, self.model.dtype).to(self.model.device)

        if window is None or (kinds and "sliding_attention" not in kinds):
            return build(allowed)
        if kinds - {"sliding_attention"}:  # mixed layers: each kind gets its own rule
            return {"full_attention": build(allowed), "sliding_attention": build(slide(allowed, positions, window))}
        return build(slide(allowed, positions, window))  # every layer slides (Mistral)


def as_target(model):
    """A target as the verifier runs it: a Hugging Face model is wrapped, a target passes through."""
    return model if hasattr(model, "new_cache") else HFTarget(model)
