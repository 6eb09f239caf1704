"""What the attention of one tree verify pass reads from the KV cache, three ways.

A verify pass feeds Q = 1 + N query rows (the pending token and N drafted nodes) after c
cached tokens. Every query needs the whole context; node i also needs its own ancestors. How
often the context's keys and values cross from memory into the chip depends on how the
kernel partitions queries and keys (Yao et al., "DeFT: Decoding with Flash Tree-Attention",
ICLR 2025, which names these partitions):

- per-branch: each root-to-leaf path decoded as its own sequence (sequence-based decoding):
  every leaf reloads the context and the path above it.
- naive mask: one dense kernel with the tree mask, FlashAttention-style: the Q rows go in
  blocks of q_block and every block streams all c + Q keys (the masked ones are read too, a
  dense kernel cannot skip them), so the context is read ceil(Q / q_block) times.
- DeFT: KV-guided grouping: each stretch of KV (the context, then each tree segment) is loaded
  once together with every query that needs it, so each key is read once whatever the shape.

Only K and V reads are counted (the mask, scores and partial results are left out); the
totals are in tokens, times kv_bytes_per_token for bytes. Pure Python, like paradec.costs.roofline.
"""
from __future__ import annotations

import math

from ..core import tree
from . import roofline
from .roofline import ModelShape

METHODS = ("per-branch", "naive mask", "DeFT")
# Tensor-core matrix tiles are at least 16 rows: the smallest query block a dense kernel uses.
Q_BLOCK = 16


def leaf_depths(parents: list[int]) -> list[int]:
    """Depth of every leaf (nodes on its path, the pending token not counted). With no nodes
    the pending token is the one leaf, at depth 0."""
    kids = tree.children(parents)
    d = tree.depths(parents)
    return [d[i] for i in range(len(parents)) if not kids[i]] or [0]


def tokens_read(parents: list[int], c: int, q_block: int = Q_BLOCK) -> dict[str, int]:
    """KV positions one verify pass's attention reads, per method (see the module doc); each
    position stands for its keys and values in every layer."""
    q = 1 + len(parents)
    return {"per-branch": sum(c + 1 + d for d in leaf_depths(parents)),
            "naive mask": math.ceil(q / q_block) * (c + q),
            "DeFT": c + q}


def bytes_read(m: ModelShape, parents: list[int], c: int, q_block: int = Q_BLOCK) -> dict[str, int]:
    """tokens_read in bytes: K and V of every layer, GQA's kv_heads only."""
    per_token = roofline.kv_bytes_per_token(m)
    return {k: v * per_token for k, v in tokens_read(parents, c, q_block).items()}


def attention_share(m: ModelShape, parents: list[int], c: int, q_block: int = Q_BLOCK,
                    b: int = 1) -> dict[str, float]:
    """The attention's KV reads as a share of all the bytes the pass moves: the weights (read
    once for the whole batch), those reads and the Q new tokens' KV writes, for b sequences.
    Short contexts on a small model: the weights dominate and the method hardly matters."""
    writes = (1 + len(parents)) * roofline.kv_bytes_per_token(m)
    weights = roofline.weight_bytes(m)
    return {k: b * v / (weights + b * (v + writes)) for k, v in bytes_read(m, parents, c, q_block).items()}


def verify_tree(trace) -> list[int]:
    """Parents of a recorded trace's largest verify tree (the first step with the most nodes):
    what the method drafted for the target to check, as the trace kept it."""
    step = max(trace.steps, key=lambda s: len(s.nodes))
    return [n.parent for n in step.nodes]
