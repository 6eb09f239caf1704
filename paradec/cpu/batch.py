"""Several sequences in one forward pass of the fast CPU target: batched decoding's verify pass.

Each sequence brings its own KV cache, tokens, position ids, attention pattern and count of kept rows,
exactly what FastTarget.forward takes. Per sequence: the embeddings, the rotary angles, and in every
layer the rotary, the cache write and the attention, on its own cache (each has its own length) with its
own mask. Over every sequence's rows at once: the products (q/k/v, o, gate/up, down, the LM head) and the
norms, where the rows' count is what is nearly free on a CPU (the weights are read once for all of them).

With paradec's kernel a row's bits do not depend on the rows beside it (see paradec/cpu/csrc/), so each
sequence's logits and hidden states are bit for bit those its own forward() gives it. Torch's fallback
products may sum a row differently when more rows share them (~1e-7)."""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class _Seq:
    """One sequence of the pass: its cache and inputs, where its rows sit among all, its rotary angles."""

    cache: object
    ids: list[int]
    positions: torch.Tensor
    allowed: torch.Tensor | None  # (1, M, cached + M), as forward_batch takes it, or None: causal
    keep: int
    begin: int  # its first row among all sequences' rows
    start: int = 0  # its cache's length before the pass
    cos: torch.Tensor | None = None
    sin: torch.Tensor | None = None

    @property
    def m(self) -> int:
        return len(self.ids)

    @property
    def end(self) -> int:
        return self.begin + self.m


@torch.inference_mode()
def forward_many(fast, passes, hidden_layers: tuple[int, ...] = ()) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
    """passes: [(cache, ids, positions, allowed, keep)], one per sequence, each as FastTarget.forward takes it
    (every cache distinct). -> [(logits (keep, V), hidden (layers, M, H) or None)], what forward() returns."""
    seqs, begin = [], 0
    for cache, ids, positions, allowed, keep in passes:
        seqs.append(_Seq(cache, ids, positions, None if allowed is None else allowed[None], keep, begin))
        begin += len(ids)
    h = fast.embed(torch.tensor([t for s in seqs for t in s.ids]))  # (R, H): a lookup, the same bits per row
    for s in seqs:
        s.start = s.cache.length
        s.cache.reserve(s.m)
        s.cos, s.sin = fast.rotary(h[None, s.begin:s.end], s.positions[None])  # (1, M, head_dim) each
    states = [h]
    for i, layer in enumerate(fast.layers):
        h = _layer(fast, i, layer, h, seqs)
        states.append(h)
    h = fast.ops.rmsnorm(h, fast.norm)
    states[-1] = h
    logits = fast.lm_head(torch.cat([h[s.end - s.keep:s.end] for s in seqs]))
    out = []
    for s, rows in zip(seqs, logits.split([s.keep for s in seqs])):
        s.cache.length = s.start + s.m
        rows = rows if fast.expand is None else fast.expand(rows[None])[0]
        hidden = torch.stack([states[j][s.begin:s.end] for j in hidden_layers]) if hidden_layers else None
        out.append((rows, hidden))
    return out


def _layer(fast, i: int, layer, h: torch.Tensor, seqs: list[_Seq]) -> torch.Tensor:
    """h (R, H), every sequence's rows -> the layer's output (R, H); each sequence's keys and values are written
    into its own cache and its queries attend to that cache only."""
    ops = fast.ops
    qkv = layer.qkv(ops.rmsnorm(h, layer.norm_in))
    outs = []
    for s in seqs:
        kc, vc = s.cache.k[i], s.cache.v[i]
        q = ops.rope_qkv(qkv[s.begin:s.end], s.cos, s.sin, kc, vc, s.start, fast.heads, fast.kv_heads)
        outs.append(ops.attention(q, kc, vc, s.start + s.m, s.allowed, fast.scaling).reshape(s.m, -1))
    h = layer.o(torch.cat(outs), residual=h)
    return layer.down(ops.silu_mul(layer.gate_up(ops.rmsnorm(h, layer.norm_post))), residual=h)
