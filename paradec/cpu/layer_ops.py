"""A decoder layer's steps other than its products, as paradec.cpu.fast runs them: in paradec's CPU extension
(paradec/cpu/csrc/layer.cpp, one call a step) or, where it cannot be built, in torch's operations (Hugging Face's
own norm and rotary, torch's attention). Both take and return the same shapes:

    rmsnorm(x (R, H), norm) -> (R, H)                      norm: the model's LlamaRMSNorm (its weight, its eps)
    rope_qkv(qkv (B*M, (heads + 2 kv) D), cos, sin (B, M, D), kc, vc (B, kv, capacity, D), start, heads, kv)
        -> q (B, M, heads, D); rotated keys and the values written into this layer's cache at start..start+M-1
    attention(q, kc, vc, length, allowed (B, M, length) bool or None: causal, scale) -> (B, M, heads, D)
    attend_many(qkv (R, (heads + 2 kv) D), cos, sin (R, D), ks, vs [(layers, 1, kv, capacity, D)], layer, starts,
                counts, allowed [(1, M_s, start_s + M_s) or None], heads, kv, scale) -> (R, heads * D)
        rope_qkv and attention for several sequences' rows at once, each on its own cache (paradec.cpu.batch)
    silu_mul(gate_up (R, 2I)) -> silu(gate) * up (R, I)"""
from __future__ import annotations

import functools

import torch
from torch.nn import functional as F
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb


class TorchOps:
    """The fallback without the extension, and an EAGLE head's steps in training."""

    @staticmethod
    def rmsnorm(x: torch.Tensor, norm) -> torch.Tensor:
        return norm(x)

    @staticmethod
    def rope_qkv(qkv, cos, sin, kc, vc, start: int, heads: int, kv_heads: int) -> torch.Tensor:
        b, m, d = cos.shape
        q, k, v = qkv.view(b, m, heads + 2 * kv_heads, d).split([heads, kv_heads, kv_heads], dim=2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=2)  # (B, M, heads, D): cos spans the heads
        kc[:, :, start:start + m] = k.transpose(1, 2)
        vc[:, :, start:start + m] = v.transpose(1, 2)
        return q

    @staticmethod
    def attention(q, kc, vc, length: int, allowed: torch.Tensor | None, scale: float) -> torch.Tensor:
        m = q.shape[1]
        mask = allowed[:, None] if allowed is not None else (causal(m, length - m, q.device) if m > 1 else None)
        out = F.scaled_dot_product_attention(q.transpose(1, 2), kc[:, :, :length], vc[:, :, :length],
                                             attn_mask=mask, scale=scale, enable_gqa=q.shape[2] != kc.shape[1])
        return out.transpose(1, 2)

    @staticmethod
    def silu_mul(gate_up: torch.Tensor) -> torch.Tensor:
        gate, up = gate_up.chunk(2, dim=-1)
        return F.silu(gate) * up

    def attend_many(self, qkv, cos, sin, ks, vs, layer: int, starts, counts, allowed, heads: int, kv_heads: int,
                    scale: float) -> torch.Tensor:
        return each_sequence(self, qkv, cos, sin, ks, vs, layer, starts, counts, allowed, heads, kv_heads, scale)


class KernelOps:
    """The extension's steps (a row's bits do not depend on the rows beside it; see layer.cpp)."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.rope_qkv, self.silu_mul = kernel.rope_qkv, kernel.silu_mul

    def rmsnorm(self, x: torch.Tensor, norm) -> torch.Tensor:
        return self.kernel.rmsnorm(x, norm.weight, norm.variance_epsilon)

    def attention(self, q, kc, vc, length: int, allowed: torch.Tensor | None, scale: float) -> torch.Tensor:
        # Every pass, a prompt's hundreds of rows included: AR's first pass is the prompt and a method's may be
        # the prompt and its first draft, and a prompt row must get the same bits in both. (Torch's SDPA for
        # passes of over 64 rows was ~5 % faster over a 716-token prompt, and gave those rows other bits: greedy
        # text then parted from AR's at 4 bits, where a last-place difference can flip an 8-bit rounding.)
        return self.kernel.attention(q, kc, vc, length, allowed, scale)

    def attend_many(self, qkv, cos, sin, ks, vs, layer: int, starts, counts, allowed, heads: int, kv_heads: int,
                    scale: float) -> torch.Tensor:
        return self.kernel.attend_many(qkv, cos, sin, ks, vs, layer, starts, counts, allowed, heads, kv_heads,
                                       scale)


def each_sequence(ops, qkv, cos, sin, ks, vs, layer: int, starts, counts, allowed, heads: int, kv_heads: int,
                  scale: float) -> torch.Tensor:
    """attend_many one sequence at a time: ops' rope_qkv, then its attention, on the sequence's rows and cache."""
    outs, row = [], 0
    for k, v, start, m, mask in zip(ks, vs, starts, counts, allowed, strict=True):
        kc, vc, rows = k[layer], v[layer], slice(row, row + m)
        q = ops.rope_qkv(qkv[rows], cos[None, rows], sin[None, rows], kc, vc, start, heads, kv_heads)
        outs.append(ops.attention(q, kc, vc, start + m, mask, scale).reshape(m, -1))
        row += m
    return torch.cat(outs)


def for_inference(x: torch.Tensor) -> KernelOps | None:
    """The extension's steps for a drafter's own layer (an EAGLE head) when x is float32 on the CPU and no
    gradient is taken, else None: training and other devices keep torch's operations."""
    if torch.is_grad_enabled() or x.device.type != "cpu" or x.dtype != torch.float32:
        return None
    return _kernel_ops()


@functools.lru_cache(maxsize=1)
def _kernel_ops() -> KernelOps | None:
    from . import kernels

    kernel = kernels.kernel()
    return None if kernel is None else KernelOps(kernel)


def causal(m: int, start: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """(M, start + M): each new token sees every cached entry and the new tokens up to itself."""
    return torch.ones(m, start + m, dtype=torch.bool, device=device).tril(start)
