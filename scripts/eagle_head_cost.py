"""What a deeper EAGLE-3 head costs to draft with: ms per head pass for 1, 2 and 3 decoder layers on the shipped
head's shapes (SmolLM2-135M: hidden 576, 9 heads, 3 kv heads, head_dim 64, MLP 1536; a 4,096-token draft
vocabulary), random weights rounded to float16 as a saved head's are, packed for the CPU kernel as the drafter
packs a loaded head, 2 threads, inference mode.

Two passes, each the median of 50 calls, the cache cropped back after each as the drafter crops it:
a context entry (1 token, fused 3H feature) over a cache of 300 entries, and one depth of a tree (8 nodes,
the head's own H-wide outputs, a tree mask) over the same cache; the draft LM head's product is timed apart
(the same at every depth).

    .venv/bin/python scripts/eagle_head_cost.py"""
from __future__ import annotations

import statistics
import time

import torch
from transformers import LlamaConfig

from paradec.cpu import fast, kernels
from paradec.drafters.eagle_head import EagleHead, HeadCache

CFG = LlamaConfig(hidden_size=576, num_attention_heads=9, num_key_value_heads=3, head_dim=64, intermediate_size=1536,
                  rms_norm_eps=1e-5, rope_theta=100000.0, max_position_embeddings=8192, vocab_size=49152)
H, CONTEXT, NODES, CALLS = 576, 300, 8, 50


def ms(call) -> float:
    """Median ms of CALLS calls, after a few warm-up ones."""
    for _ in range(5):
        call()
    times = []
    for _ in range(CALLS):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def passes(layers: int) -> tuple[float, float, float]:
    """(1-token pass, 8-node pass, LM-head product) ms for a head of `layers` decoder layers."""
    # rounded through float16 as a saved head's weights are: the kernel then packs float16 panels, as it does for
    # a loaded head (float32 panels would move twice the bytes)
    head = fast.pack_linears(EagleHead(CFG, 3, torch.arange(4096), layers).half().float().eval())
    cache = HeadCache()
    head(torch.randn(1, CONTEXT, 3 * H), torch.randn(1, CONTEXT, H), torch.arange(CONTEXT)[None], cache=cache)
    one = (torch.randn(1, 1, 3 * H), torch.randn(1, 1, H), torch.tensor([[CONTEXT]]))
    mask = torch.ones(1, 1, NODES, CONTEXT + NODES, dtype=torch.bool)
    mask[..., CONTEXT:] = torch.eye(NODES, dtype=torch.bool)  # siblings: each sees the context and itself
    tree = (torch.randn(1, NODES, H), torch.randn(1, NODES, H), torch.full((1, NODES), CONTEXT))

    def step(args, m=None):
        head(*args, m, cache)
        cache.crop(CONTEXT)

    out = torch.randn(NODES, H)
    return ms(lambda: step(one)), ms(lambda: step(tree, mask)), ms(lambda: head.logits(out, None))


def main() -> None:
    torch.set_num_threads(2)
    kernel = "the CPU kernel" if kernels.kernel() is not None else "torch (no kernel here)"
    print(f"EAGLE-3 head, SmolLM2-135M shapes, cache of {CONTEXT}, median of {CALLS} (ms), on {kernel}")
    print("layers | 1 token | 8 tree nodes | LM head (8 rows, 4096)")
    with torch.inference_mode():
        for layers in (1, 2, 3):
            a, b, c = passes(layers)
            print(f"{layers:6d} | {a:7.3f} | {b:12.3f} | {c:.3f}")


if __name__ == "__main__":
    main()
