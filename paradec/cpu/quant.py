"""The 4-bit CPU forward: a Llama-family GGUF file read as it ships (Q4_1 projections, a Q8_0 tied embedding and LM
head, F32 norms), its blocks repacked once at load into the kernel's panels (paradec/cpu/csrc/quant_math.h: about
the file's bytes, a second or two), never widened to a float32 copy of a weight.

The forward is paradec.cpu.fast's (the same layer steps, cache, batching and hidden states); only its products
differ: activations quantized to 8 bits per block of 32 and integer dot products with the file's codes, each row
on its own (a row's logits have the same bits alone or among 64 rows), so every lossless method gives exactly
the tokens of AR at 4 bits too. The embedding is a lookup of the Q8_0 rows, d * q as the gguf package computes
it: the float32 engine's embedding bit for bit.

QuantModel is what paradec.models.Loaded holds as the model at 4 bits: the configuration, the generation
settings, and the narrow interface drafters read (paradec.cpu.view: embed, head, norm, prefix)."""
from __future__ import annotations

import copy

import numpy as np
import torch
from transformers import GenerationConfig
from transformers.models.llama.modeling_llama import LlamaRMSNorm, LlamaRotaryEmbedding

from . import kernels
from .fast import FastTarget
from .gguf_file import GGUFModel


class QLinear:
    """y = x W^T (+ residual) for x (M, K) float32, W (N, K) a GGUF matrix's blocks packed into the kernel's panels."""

    def __init__(self, kernel, type_: int, k: int, n: int, packed: torch.Tensor):
        self.kernel, self.type, self.k, self.n, self.packed = kernel, type_, k, n, packed

    @classmethod
    def pack(cls, kernel, type_: int, k: int, rows) -> QLinear:
        """rows: the file's (N, blocks' bytes) uint8 rows, a numpy array (its memory map) or a tensor."""
        return cls(kernel, type_, k, int(rows.shape[0]), kernel.quant_pack(torch.as_tensor(rows), type_, k))

    def __call__(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        return self.kernel.quant_linear(x, self.packed, self.type, self.n, residual)

    def rows(self, ids: torch.Tensor) -> torch.Tensor:
        """Rows `ids` dequantized, float32 (ids.shape + (K,)): an embedding lookup."""
        out = self.kernel.quant_rows(self.packed, self.type, self.n, self.k, ids.reshape(-1))
        return out.view(*ids.shape, self.k)

    def select(self, ids: torch.Tensor) -> QLinear:
        """A product over rows `ids` only (an LM head's vocabulary subset), the same blocks: each of its outputs
        has the bits the whole weight's product gives that row."""
        packed = self.kernel.quant_select(self.packed, self.type, self.n, self.k, ids.reshape(-1))
        return QLinear(self.kernel, self.type, self.k, ids.numel(), packed)


class QLayer:
    """One decoder layer as paradec.cpu.fast runs it: fused q/k/v and gate/up products, o, down, two norms."""

    def __init__(self, kernel, f: GGUFModel, i: int):
        cfg, n = f.config, f.names(i)
        self.qkv = _fused(kernel, f.matrix(n["q"], cfg.num_attention_heads),
                          f.matrix(n["k"], cfg.num_key_value_heads), f.matrix(n["v"]))
        self.o = QLinear.pack(kernel, *f.matrix(n["o"]))
        self.gate_up = _fused(kernel, f.matrix(n["gate"]), f.matrix(n["up"]))
        self.down = QLinear.pack(kernel, *f.matrix(n["down"]))
        self.norm_in, self.norm_post = _norm(f, n["norm_in"]), _norm(f, n["norm_post"])
        f.release(*(n[k] for k in ("q", "k", "v", "o", "gate", "up", "down")))


def _fused(kernel, *parts) -> QLinear:
    """Several projections of one input as one product (their outputs side by side)."""

    kinds = {(t, k) for t, k, _ in parts}
    if len(kinds) > 1:
        raise ValueError("the 4-bit engine fuses projections of one type: this file mixes them within a layer")
    (type_, k), = kinds
    return QLinear.pack(kernel, type_, k, np.concatenate([rows for _, _, rows in parts]))


def _norm(f: GGUFModel, name: str) -> LlamaRMSNorm:
    norm = LlamaRMSNorm(f.config.hidden_size, eps=f.config.rms_norm_eps)
    with torch.no_grad():
        norm.weight.copy_(f.vector(name))
    return norm.eval()


class QuantTarget(FastTarget):
    """paradec.cpu.fast's forward over a GGUF file's packed blocks (new_cache, forward, forward_many, hidden)."""

    def __init__(self, f: GGUFModel, kernel):
        cfg = f.config
        names = ["output.weight", "token_embd.weight"] if "output.weight" in f.tensors else ["token_embd.weight"]
        head = QLinear.pack(kernel, *f.matrix(names[0]))
        table = head if cfg.tie_word_embeddings else QLinear.pack(kernel, *f.matrix("token_embd.weight"))
        f.release(*names)
        self.table = table  # the embedding's rows, packed: a lookup dequantizes the few it needs
        self.assemble(cfg, kernel, table.rows, LlamaRotaryEmbedding(cfg).eval(), _norm(f, "output_norm.weight"),
                      [QLayer(kernel, f, i) for i in range(cfg.num_hidden_layers)], head)

    def truncated(self, layers: int) -> QuantTarget:
        """The first `layers` layers with the final norm and LM head (an untrained early-exit draft, self:N):
        the same packed weights, shared."""
        out = object.__new__(QuantTarget)
        out.__dict__.update(self.__dict__)
        out.layers, out.config = self.layers[:layers], copy.deepcopy(self.config)
        out.config.num_hidden_layers = layers
        return out


class QuantModel:
    """A GGUF file's model at 4 bits: what paradec.models.Loaded holds in place of a Hugging Face model."""

    weights = "q4"

    def __init__(self, path):
        kernel = kernels.kernel()
        if kernel is None:
            raise ValueError(f"the 4-bit engine needs paradec's C++ kernel, which cannot be built here: "
                             f"{kernels.why_not()}")
        f = GGUFModel(path)
        self.target = QuantTarget(f, kernel)
        self.config = f.config
        self.generation_config = GenerationConfig(bos_token_id=f.config.bos_token_id,
                                                  eos_token_id=f.config.eos_token_id,
                                                  pad_token_id=f.config.pad_token_id)

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    @property
    def dtype(self) -> torch.dtype:
        return torch.float32  # the activations', the KV cache's and a drafter's own modules'

    # A target as the verifier runs it (paradec.core.targets): its forward's.
    def new_cache(self, batch: int = 1):
        return self.target.new_cache(batch)

    def forward(self, *args, **kw):
        return self.target.forward(*args, **kw)

    def forward_many(self, *args, **kw):
        return self.target.forward_many(*args, **kw)

    # The drafters' interface (paradec.cpu.view).
    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.target.embed(ids)

    def head(self, ids: torch.Tensor | None = None):
        from .view import Rows

        linear = self.target.lm_head if ids is None else self.target.lm_head.select(ids)
        return Rows(linear.n, lambda x: linear(x.reshape(-1, x.shape[-1]).contiguous()).view(*x.shape[:-1], -1))

    def norm(self, h: torch.Tensor) -> torch.Tensor:
        return self.target.ops.rmsnorm(h.reshape(-1, h.shape[-1]).contiguous(), self.target.norm).view(h.shape)

    def prefix(self, layers: int):
        from .view import FastPrefix

        return FastPrefix(self.target, layers)
