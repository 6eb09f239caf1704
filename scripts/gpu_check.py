"""The GPU check of the verify-pass cost, for a session lent a CUDA machine (the `device` tool).

A model of the embedded model's shapes (SmolLM2-135M-Instruct: 30 layers, 576 wide, GQA 9/3) with random
weights, since costs do not depend on the weights and the GGUF is too large to carry there. For bfloat16
and float32 it times one verify pass over 1-64 tokens after a 512-token cache, through Hugging Face's
forward as the verifier runs it on a GPU (paradec.core.targets.HFTarget, a tree mask for trees), median of 9,
sizes interleaved. Writes assets/bench/gpu-<device name>.json in forward_cost.json's schema (a curve per
dtype), which the Roofline page draws beside this CPU's.

    python scripts/gpu_check.py            # ~2 min on an H100-class GPU"""
from __future__ import annotations

import json
import re
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from paradec.core.steps import Draft  # noqa: E402
from paradec.core.targets import HFTarget  # noqa: E402
from paradec.core.verify import target_forward  # noqa: E402

SIZES = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64)
CONTEXT = 512


def model_of_embedded_shape(dtype: torch.dtype):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                      num_attention_heads=9, num_key_value_heads=3, tie_word_embeddings=True,
                      max_position_embeddings=8192, rope_theta=100000.0)
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).to("cuda", dtype).eval()


@torch.inference_mode()
def curve(dtype: torch.dtype, repeats: int = 9) -> dict:
    target = HFTarget(model_of_embedded_shape(dtype))
    ctx = torch.randint(0, 49152, (CONTEXT,)).tolist()
    times = {n: [] for n in SIZES}
    for _ in range(repeats):
        for n in SIZES:
            cache = target.new_cache()
            target_forward(target, cache, ctx, Draft())
            fan = [-1] * min(n - 1, 4) + list(range(max(n - 5, 0)))  # a tree: 4 roots, then a chain under root 0
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            target_forward(target, cache, [ctx[-1]], Draft(tokens=ctx[: n - 1], parents=fan[: n - 1]))
            torch.cuda.synchronize()
            times[n].append((time.perf_counter() - t0) * 1e3)
    return {"median_ms": [statistics.median(times[n]) for n in SIZES], "all_ms": [times[n] for n in SIZES]}


def main() -> int:
    if not torch.cuda.is_available():
        print("gpu_check: no CUDA device here", file=sys.stderr)
        return 2
    name = torch.cuda.get_device_name()
    curves = {f"{name} {d}": curve(getattr(torch, d)) for d in ("bfloat16", "float32")}
    out = ROOT / "assets" / "bench" / f"gpu-{re.sub(r'[^A-Za-z0-9]+', '-', name).strip('-').lower()}.json"
    out.write_text(json.dumps({"model": "SmolLM2-135M-Instruct shapes, random weights", "device": name,
                               "context_tokens": CONTEXT, "threads": torch.get_num_threads(), "tokens": list(SIZES),
                               "curves": curves}))
    for label, c in curves.items():
        print(label, {n: round(m, 2) for n, m in zip(SIZES, c["median_ms"])})
    print(f"gpu_check: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
