"""EAGLE draft heads (Li et al., 2024; 2025): decoder layers that draft at the feature level.

EAGLE-1 (version 1): entry t reads the target's final feature f_t and the embedding of the
token x_{t+1}, concatenated and projected by `fc` (2H -> H), runs the head's decoder layers and
gives a feature that predicts f_{t+1}; the target's own LM head turns it into q(x_{t+2}). Drafting
further, the head's own output stands in for the feature it has not seen yet.

EAGLE-3 (version 3): `fc` fuses a low, a middle and a high layer of the target (3H -> H);
the first layer reads [norm(embedding), norm(feature)] (2H wide), and a final norm and a small LM
head of its own score a reduced draft vocabulary (`vocab_ids`: draft id -> target id).

Depth. The official heads, and paradec's shipped ones, have one decoder layer (`layer.`). A deeper
head (`layers` = N) adds N - 1 plain pre-norm Llama layers over the first one's output (`more.0.`,
`more.1.`, ...), each with its own keys and values in the HeadCache, at the same positions and
under the same mask; a one-layer head's parameter names are those of the official checkpoints.

The layers are composed from Hugging Face's Llama parts (RMSNorm, MLP, rotary embedding); the
attention is written here because the head keeps its own small KV cache and attends with
tree masks. Drafting on the CPU (float32, no gradient), the norms and the attention run in
paradec's extension (paradec.cpu.layer_ops), the same math in one call each. Parameter names follow
the official checkpoints, so those load by renaming only (`layers.0.` for EAGLE-1, `midlayer.`
for EAGLE-3 -> `layer.`)."""
from __future__ import annotations

import torch
from torch import nn
from transformers.models.llama.modeling_llama import LlamaMLP, LlamaRMSNorm, LlamaRotaryEmbedding, apply_rotary_pos_emb

from ..cpu.layer_ops import TorchOps, for_inference
from ..traces import files


class HeadCache:
    """The head's keys and values for one run: one (k, v) per decoder layer, each (B, kv_heads, T, head_dim).
    Every layer caches the same entries (its keys at the same positions), so the cache's length is any
    layer's once a pass is over, and crop(n) crops them all."""

    def __init__(self):
        self.kv: list[tuple[torch.Tensor, torch.Tensor]] = []  # layer index -> (k, v)

    def __len__(self):
        return self.kv[0][0].shape[2] if self.kv else 0

    def append(self, layer: int, k, v):
        """Add a layer's new entries (layers are first seen in order, 0 first); -> its whole (k, v)."""
        if layer == len(self.kv):
            self.kv.append((k, v))
        else:
            old_k, old_v = self.kv[layer]
            self.kv[layer] = torch.cat([old_k, k], dim=2), torch.cat([old_v, v], dim=2)
        return self.kv[layer]

    def crop(self, n: int) -> None:
        """Keep the first n entries of every layer (drafted tree nodes are dropped after each step)."""
        self.kv = [(k[:, :, :n], v[:, :, :n]) for k, v in self.kv]


class HeadAttention(nn.Module):
    def __init__(self, cfg, in_dim: int, index: int):
        """index: the layer's place in the head, its slot in the HeadCache."""
        super().__init__()
        self.index = index
        self.heads, self.kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.heads
        self.q_proj = nn.Linear(in_dim, self.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(in_dim, self.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(in_dim, self.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.heads * self.head_dim, cfg.hidden_size, bias=False)

    def forward(self, x, cos, sin, mask, cache: HeadCache | None, extra_kv=None, record=None):
        """x (B, T, in) -> (B, T, H). mask: bool (B|1, 1, T, S) where S = cached + T (+ extra),
        True = may attend; None = causal over cache + x. extra_kv: this layer's more (k, v) appended
        after the sequence's own, not cached (training-time test's earlier unrolled steps); record:
        a list this call's own (k, v) is appended to (for the next unrolled step)."""
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        if record is not None:
            record.append((k, v))
        if cache is not None:
            k, v = cache.append(self.index, k, v)
        if extra_kv:
            k = torch.cat([k, *[e[0] for e in extra_kv]], dim=2)
            v = torch.cat([v, *[e[1] for e in extra_kv]], dim=2)
        # Drafting: the extension's one call; training: torch's SDPA. Neither copies the kv heads that groups
        # of query heads share.
        ops = for_inference(x) or TorchOps
        rows = None if mask is None else mask[:, 0].expand(B, T, k.shape[2])
        out = ops.attention(q.transpose(1, 2).contiguous(), k.contiguous(), v.contiguous(), k.shape[2], rows,
                            self.head_dim ** -0.5)
        return self.o_proj(out.reshape(B, T, -1))


class _Layer(nn.Module):
    """A Llama decoder layer: attention over what `attended` gives -> residual; post-attention norm -> MLP ->
    residual."""

    def __init__(self, cfg, in_dim: int, index: int):
        super().__init__()
        self.self_attn = HeadAttention(cfg, in_dim, index)
        self.post_attention_layernorm = LlamaRMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = LlamaMLP(cfg)

    def forward(self, h, emb, cos, sin, mask, cache, extra_kv=None, record=None):
        h = h + self.self_attn(self.attended(h, emb), cos, sin, mask, cache, extra_kv, record)
        return h + self.mlp(norm(self.post_attention_layernorm, h))


class HeadLayer(_Layer):
    """The head's first layer: EAGLE-1's skips its input norm (the fc output goes straight in),
    EAGLE-3's attends over [input_layernorm(embedding), hidden_norm(feature)]."""

    def __init__(self, cfg, version: int):
        H, eps = cfg.hidden_size, cfg.rms_norm_eps
        super().__init__(cfg, 2 * H if version == 3 else H, 0)
        self.version = version
        if version == 3:
            self.input_layernorm = LlamaRMSNorm(H, eps)
            self.hidden_norm = LlamaRMSNorm(H, eps)

    def attended(self, h, emb):
        if self.version == 1:
            return h
        return torch.cat([norm(self.input_layernorm, emb), norm(self.hidden_norm, h)], dim=-1)


class PlainLayer(_Layer):
    """A deeper head's later layers: plain pre-norm over h (input_layernorm -> attention, H -> H)."""

    def __init__(self, cfg, index: int):
        super().__init__(cfg, cfg.hidden_size, index)
        self.input_layernorm = LlamaRMSNorm(cfg.hidden_size, cfg.rms_norm_eps)

    def attended(self, h, emb):
        return norm(self.input_layernorm, h)


def norm(module: LlamaRMSNorm, x: torch.Tensor) -> torch.Tensor:
    """module(x), in the extension when drafting on the CPU (one call, not six)."""
    ops = for_inference(x)
    return module(x) if ops is None else ops.rmsnorm(x.reshape(-1, x.shape[-1]).contiguous(), module).view(x.shape)


class EagleHead(nn.Module):
    """fc + `layers` decoder layers (+ EAGLE-3's norm and draft LM head). Read-only once loaded:
    each run passes its own HeadCache."""

    def __init__(self, cfg, version: int, vocab_ids: torch.Tensor | None = None, layers: int = 1):
        super().__init__()
        if version not in (1, 3):
            raise ValueError("an EAGLE head is version 1 or 3")
        if layers < 1:
            raise ValueError("an EAGLE head has one decoder layer or more")
        cfg = layer_config(cfg)  # a Mistral or Qwen2 target's shape, as the Llama parts read it
        H = cfg.hidden_size
        self.version, self.hidden_size = version, H
        self.fc = nn.Linear(2 * H, H, bias=True) if version == 1 else nn.Linear(3 * H, H, bias=False)
        self.layer = HeadLayer(cfg, version)
        self.more = nn.ModuleList(PlainLayer(cfg, i) for i in range(1, layers))  # empty: the official layout
        self.rotary = LlamaRotaryEmbedding(cfg)
        # draft id -> target id; None = the target's whole vocabulary (EAGLE-1 with the target's LM head)
        self.register_buffer("vocab_ids", None if vocab_ids is None else vocab_ids.long())
        if version == 3:
            self.norm = LlamaRMSNorm(H, cfg.rms_norm_eps)
            self.lm_head = nn.Linear(H, len(vocab_ids), bias=False)

    @property
    def layers(self) -> list[nn.Module]:
        """The decoder layers in order (the first one's index in the HeadCache is 0)."""
        return [self.layer, *self.more]

    def forward(self, feats, emb, pos, mask=None, cache: HeadCache | None = None, extra_kv=None, record=None):
        """feats (B, T, H or 3H): the target's features (3H: EAGLE-3's fused ones, projected by
        fc) or the head's own earlier outputs (H); emb (B, T, H): embeddings of the next tokens;
        pos (B, T) position ids -> the head's output features (B, T, H), pre-norm. Training-time
        test: extra_kv, per earlier unrolled step, its per-layer (k, v); record: a list that gets this
        call's per-layer (k, v), in layer order. Every layer attends under the same mask and positions."""
        if self.version == 1:
            h = self.fc(torch.cat([emb, feats], dim=-1))
        else:
            h = self.fc(feats) if feats.shape[-1] != self.hidden_size else feats
        cos, sin = self.rotary(h, pos)
        for i, layer in enumerate(self.layers):
            h = layer(h, emb, cos, sin, mask, cache, [step[i] for step in extra_kv] if extra_kv else None, record)
        return h

    def logits(self, out, target_rows):
        """Draft logits over the head's vocabulary: EAGLE-1 scores with the target's LM-head rows
        (target_rows: the rows of vocab_ids, or the whole head), EAGLE-3 with its own."""
        if self.version == 3:
            return self.lm_head(norm(self.norm, out))
        return target_rows(out) if callable(target_rows) else out @ target_rows.T  # paradec.cpu.fast's product


def fuse_layers(num_layers: int) -> tuple[int, int, int]:
    """EAGLE-3's low, middle and high features: the inputs of layers 2, L/2 and L-3, i.e. these
    indices into Hugging Face's hidden_states tuple (0 = the embeddings). Clamped for tiny test models."""
    return min(2, num_layers), num_layers // 2, max(num_layers - 3, 0)


LAYER_KEYS = ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size",
              "rms_norm_eps", "rope_theta", "max_position_embeddings", "hidden_act", "vocab_size", "rope_parameters")


def layer_config(cfg):
    """The Llama config of the head's layer: the target's shape, whatever the target's family."""
    from transformers import LlamaConfig

    return LlamaConfig(**{k: getattr(cfg, k) for k in LAYER_KEYS if getattr(cfg, k, None) is not None})


WEIGHT_FILES = ("head.safetensors", "model.safetensors", "pytorch_model.bin")
OFFICIAL_PREFIX = {"layers.0.": "layer.", "midlayer.": "layer."}  # EAGLE-1 / EAGLE-3 checkpoints


def save(head: EagleHead, folder, cfg, meta: dict) -> None:
    """head.safetensors (float16) + config.json: the layers' Llama config, their number and `meta` (training
    facts)."""
    import json
    from pathlib import Path

    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: (v.half() if v.is_floating_point() else v).contiguous() for k, v in head.state_dict().items()}
    with files.replacing(folder / "head.safetensors") as tmp:  # whole or not at all, through a link to its target
        save_file(state, str(tmp))
    layer = {k: getattr(cfg, k) for k in LAYER_KEYS if getattr(cfg, k, None) is not None}
    config = {"eagle_version": head.version, "num_head_layers": len(head.layers), **layer, **meta}
    files.write_atomic(folder / "config.json", json.dumps(config, indent=1))


def load(folder) -> tuple[EagleHead, dict]:
    """An EAGLE head from a folder: paradec's own files or an official EAGLE-1 / EAGLE-3
    checkpoint (config.json + model.safetensors or pytorch_model.bin, read weights-only). A config without
    num_head_layers (the official ones, paradec's first heads) is a one-layer head's."""
    import json
    from pathlib import Path

    from safetensors.torch import load_file
    from transformers import LlamaConfig

    folder = Path(folder)
    files.only_regular(folder)  # a FIFO among its files would block the read below forever
    meta = json.loads((folder / "config.json").read_text())
    path = next((folder / f for f in WEIGHT_FILES if (folder / f).exists()), None)
    if path is None:
        raise FileNotFoundError(f"no {' or '.join(WEIGHT_FILES)} in {folder}")
    state = (load_file(str(path)) if path.suffix == ".safetensors"
             else torch.load(path, map_location="cpu", weights_only=True))
    version = meta.get("eagle_version") or (3 if "midlayer.self_attn.q_proj.weight" in state else 1)
    state = _rename(state)
    if "d2t" in state:  # EAGLE-3's map: target id = draft id + d2t[draft id]
        state["vocab_ids"] = torch.arange(len(state["d2t"])) + state.pop("d2t").long()
    cfg = LlamaConfig(**{k: v for k, v in meta.items() if k in LlamaConfig().to_dict() or k == "head_dim"})
    ids = state.get("vocab_ids", torch.zeros(0)) if version == 3 else state.get("vocab_ids")
    layers = _layers(meta, state)
    _check_shapes(cfg, version, ids, layers, state)
    head = EagleHead(cfg, version, ids, layers)
    head.load_state_dict(state, strict=True)
    return head.float().eval(), meta


def _check_shapes(cfg, version: int, ids, layers: int, state: dict) -> None:
    """The weights' names and shapes against the head config.json describes, built on the meta device (no
    memory, no initialisation) before the real one: a config from elsewhere (Llama's defaults: 4,096 wide) would
    otherwise allocate and initialise a head many times the size of its weights, only to refuse them."""
    with torch.device("meta"):
        want = {k: tuple(v.shape) for k, v in EagleHead(cfg, version, ids, layers).state_dict().items()}
    got = {k: tuple(v.shape) for k, v in state.items()}
    missing, unexpected = sorted(want.keys() - got.keys()), sorted(got.keys() - want.keys())
    if missing or unexpected:  # the file's own names are not echoed: ours only
        what = f"no {', '.join(missing[:3])}" if missing else f"{len(unexpected)} tensor(s) the head does not have"
        raise ValueError(f"the weights are not those of the head config.json describes ({what})")
    for k, shape in want.items():
        if got[k] != shape:
            raise ValueError(f"the weights do not fit config.json: {k} is {list(got[k])}, the head needs {list(shape)}")


def _layers(meta: dict, state: dict) -> int:
    """The config's number of decoder layers, checked against the weights before any is built (a config
    from elsewhere saying a million would otherwise allocate them)."""
    layers = meta.get("num_head_layers", 1)
    found = 1 + len({key.split(".")[1] for key in state if key.startswith("more.")})
    if layers != found:
        raise ValueError(f"config.json says num_head_layers {layers!r}, the weights hold {found} decoder layers")
    return found


def _rename(state: dict) -> dict:
    """Official names -> ours; what the head does not use (the target's embeddings, t2d) is dropped."""
    out = {}
    for key, value in state.items():
        if key in ("embed_tokens.weight", "t2d") or key.startswith("rotary"):
            continue
        for old, new in OFFICIAL_PREFIX.items():
            if key.startswith(old):
                key = new + key[len(old):]
        out[key] = value
    return out
