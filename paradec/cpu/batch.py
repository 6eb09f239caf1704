"""Several sequences in one forward pass of the fast CPU target: batched decoding's verify pass.

Each sequence brings its own KV cache, tokens, position ids, attention pattern and count of kept rows,
exactly what FastTarget.forward takes. Over every sequence's rows at once: the products (q/k/v, o,
gate/up, down, the LM head) and the norms, where the rows' count is what is nearly free on a CPU (the
weights are read once for all of them). Per sequence, in the same call a layer (ops.attend_many): the
rotary, the cache write and the attention, on its own cache (each has its own length) with its own mask.

With paradec's kernel a row's bits do not depend on the rows beside it (see paradec/cpu/csrc/), so each
sequence's logits and hidden states are bit for bit those its own forward() gives it. Torch's fallback
products may sum a row differently when more rows share them (~1e-7)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

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

    @property
    def m(self) -> int:
        return len(self.ids)

    @property
    def end(self) -> int:
        return self.begin + self.m


class Caches(NamedTuple):
    """What ops.attend_many takes of every sequence, gathered once a pass: whole caches (layers, 1, kv, capacity,
    head_dim), lengths before the pass, rows, attention patterns; and every row's rotary angles (R, head_dim)."""

    ks: list[torch.Tensor]
    vs: list[torch.Tensor]
    starts: list[int]
    counts: list[int]
    allowed: list[torch.Tensor | None]
    cos: torch.Tensor
    sin: torch.Tensor


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
    # (R, head_dim) each: a position's angles are its own products (no sums), the bits it gets alone
    cos, sin = (x[0] for x in fast.rotary(h[None], torch.cat([s.positions for s in seqs])[None]))
    caches = Caches([s.cache.k for s in seqs], [s.cache.v for s in seqs], [s.start for s in seqs],
                    [s.m for s in seqs], [s.allowed for s in seqs], cos, sin)
    states = [h]
    for i, layer in enumerate(fast.layers):
        h = _layer(fast, i, layer, h, caches)
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


def _layer(fast, i: int, layer, h: torch.Tensor, c: Caches) -> torch.Tensor:
    """h (R, H), every sequence's rows -> the layer's output (R, H); each sequence's keys and values are written
    into its own cache and its queries attend to that cache only."""
    ops = fast.ops
    qkv = layer.qkv(ops.rmsnorm(h, layer.norm_in))
    out = ops.attend_many(qkv, c.cos, c.sin, c.ks, c.vs, i, c.starts, c.counts, c.allowed, fast.heads, fast.kv_heads,
                          fast.scaling)
    h = layer.o(out, residual=h)
    return layer.down(ops.silu_mul(layer.gate_up(ops.rmsnorm(h, layer.norm_post))), residual=h)
