"""Self-speculative early exit (Kangaroo, LayerSkip, Draft & Verify): the target drafts with
its own first `exit_layer` decoder layers, then verifies with all of them.

The shallow sub-network is the target's own modules, shared and only read: its embedding,
layers [0, exit_layer) and rotary embedding run here, one layer at a time, into a KV cache
this drafter owns. A raw exit state is a poor input for the final norm and LM head (the
later layers still had work to do), so a small trained adapter (Kangaroo's idea: one Llama
decoder layer of the target's width) maps it towards the final state first; the target's
final norm and the LM-head rows of a vocabulary subset then give q. adapter=none skips the
adapter and reads the full LM head straight from the exit: the plain early exit, which
agrees with the full model rarely at shallow depths. The chain is verified in one target
pass with exact rejection sampling on q, as sps: lossless. How long the chain gets is a rule of
paradec.drafters.draft_length (draft_length=fixed|heuristic|confidence|learned; k caps it)."""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from transformers import DynamicCache
from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

from ..core.errors import first_line
from ..cpu import view
from ..cpu.view import causal_mask, run_layers
from .chain import ChainDrafter
from .subset import VocabSubset, read_weights, save_weights

SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "drafters" / "early-exit-smollm2"
WEIGHTS = "adapter.safetensors"
STATS = "stats.json"  # the card's numbers (agreement by exit depth), what the page reads


class Adapter(nn.Module):
    """One Llama decoder layer of the target's width, at cache slot `exit_layer` (right after
    the shared layers, so one cache serves both), and the subset of tokens it scores."""

    def __init__(self, cfg, exit_layer: int, ids: torch.Tensor):
        super().__init__()
        self.exit_layer = exit_layer
        self.layer = LlamaDecoderLayer(cfg, layer_idx=exit_layer)
        self.register_buffer("ids", ids.long(), persistent=False)


def save(adapter: Adapter, folder: Path, metadata: dict) -> Path:
    """The adapter's layer (float16) and subset ids; the target's weights are never stored."""
    tensors = {f"layer.{k}": v for k, v in adapter.layer.state_dict().items()}
    return save_weights(Path(folder) / WEIGHTS, tensors, adapter.ids, {"exit_layer": adapter.exit_layer, **metadata})


def load(target_model, folder: Path) -> Adapter:
    """An adapter for this target, on its device and dtype (a fresh module per call: not shared)."""
    target = view.as_view(target_model)
    meta, state, ids = read_weights(Path(folder) / WEIGHTS, "adapter", "python -m paradec.train early_exit")
    exit_layer = int(meta["exit_layer"])
    width = state["layer.input_layernorm.weight"].shape[0]
    if width != target.config.hidden_size:
        raise ValueError(f"the adapter at {folder} is {width} wide, the target {target.config.hidden_size}")
    adapter = Adapter(target.config, exit_layer, ids)
    adapter.load_state_dict(state)
    return adapter.to(target.device, target.dtype).eval()


class EarlyExit(ChainDrafter):
    name = "early_exit"

    def __init__(self, target_model, *, k: int, exit_layer: int, adapter: str, draft_length: str, threshold: float):
        """adapter: a folder ("" = the shipped one, trained at exit layer 2) or "none" (no adapter);
        draft_length, threshold: the rule that decides how many of up to k tokens a step drafts."""
        self.params = dict(k=k, exit_layer=exit_layer, adapter=adapter,
                           draft_length=draft_length, threshold=threshold)
        total = target_model.config.num_hidden_layers
        if not exit_layer < total:
            raise ValueError(f"exit_layer must be between 1 and {total - 1} (the target has {total} layers)")
        super().__init__(k, draft_length, threshold)
        target = view.as_view(target_model)  # shared, read-only: its first layers, final norm and LM head
        self.prefix, self.norm = target.prefix(exit_layer), target.norm
        self.rotary = LlamaRotaryEmbedding(target.config).to(target.device)  # the adapter's positions
        self.adapter, self.subset = None, None
        if adapter != "none":
            self.adapter = self._adapter(target_model, adapter, exit_layer)
            self.subset = VocabSubset(self.adapter.ids, target.config.vocab_size)
        # the LM head's rows (a subset's: a copy; q is zero outside it, so rejection stays exact)
        self.rows = target.head(None if self.subset is None else self.subset.ids)

    @staticmethod
    def _adapter(target_model, spec: str, exit_layer: int) -> Adapter:
        try:
            adapter = load(target_model, Path(spec) if spec else SHIPPED)
        except Exception as e:  # a file from the user: whatever its reader fails with is one line
            raise ValueError(f"cannot load an early-exit adapter from {spec or 'the shipped folder'}: "
                             f"{first_line(e)}") from None
        if adapter.exit_layer != exit_layer:
            raise ValueError(f"this adapter was trained at exit layer {adapter.exit_layer}, not {exit_layer} "
                             "(use adapter=none for an untrained exit)")
        return adapter

    def new_cache(self):
        return _Caches(self.prefix.new_cache(), DynamicCache())  # this run's: the exit layers', the adapter's

    def record_fields(self) -> dict:
        return {"exit_layer": self.params["exit_layer"]}

    def logits_after(self, feed: list[int]) -> torch.Tensor:
        """Full-vocabulary logits at the last of `feed` (-inf outside the adapter's subset)."""
        start = self.cache.get_seq_length()
        h = self.prefix.hidden(self.cache.prefix, feed)[None]  # (1, M, H): the target's first layers
        if self.adapter is not None:
            pos = torch.arange(start, start + len(feed), device=h.device)[None]
            h = run_layers([self.adapter.layer], self.rotary, h, pos, causal_mask(len(feed), start + len(feed), h),
                           self.cache.adapter)
        logits = self.rows(self.norm(h[0, -1:]))[0]
        return logits if self.subset is None else self.subset.expand(logits)


class _Caches:
    """Early exit's draft caches as one: the target's exit layers' (the view's) and the adapter's own."""

    def __init__(self, prefix, adapter):
        self.prefix, self.adapter = prefix, adapter

    def get_seq_length(self) -> int:
        return self.prefix.get_seq_length()

    def crop(self, n: int) -> None:
        self.prefix.crop(n)
        self.adapter.crop(n)
