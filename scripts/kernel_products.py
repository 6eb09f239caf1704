"""The CPU kernel's products beside torch's, on the embedded model's own weights: for each shape (the 30 layers'
fused q/k/v, o, fused gate/up and down products, each over its 30 layers' weights in turn as a forward pass reads
them, and the LM head), for 1 to 64 rows, the time of
  q4:    paradec's 4-bit products over the GGUF's blocks (paradec.cpu.quant),
  torch: torch.nn.functional.linear on those blocks dequantized to float32 (the 4-bit products' reference),
  f32:   paradec's float32 products (paradec.cpu.fast) on the same float32 weights.
Interleaved in one process (every variant in turn, `--repeats` times, the best of them: on a shared machine a
neighbour's burst lands on some repeats, and a median of 15 still caught one), so that load falls on all alike.
Prints docs/kernel.md's tables (microseconds; q4 / torch and f32 / torch).

    python scripts/kernel_products.py [--threads 2] [--repeats 15]"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from paradec.costs import machine  # noqa: E402
from paradec.cpu.fast import Linear  # noqa: E402
from paradec.models import load  # noqa: E402

ROWS = (1, 2, 4, 8, 16, 32, 64)
SHAPES = ("qkv", "o", "gate_up", "down")


def variants(q4, kernel):
    """shape -> (label, [(q4 product, float32 weight, packed float32 product)] one per layer)."""
    out = {}
    for shape in SHAPES:
        per_layer = []
        for layer in q4.layers:
            lin = getattr(layer, shape)
            w = lin.rows(torch.arange(lin.n))  # the blocks dequantized: the gguf package's values
            per_layer.append((lin, w, Linear(w, None, kernel)))
        out[shape] = (f"{shape} {per_layer[0][0].k}→{per_layer[0][0].n} (x{len(per_layer)} layers)", per_layer)
    head = q4.lm_head
    w = q4.table.rows(torch.arange(head.n))
    out["lm_head"] = (f"LM head {head.k}→{head.n}", [(head, w, Linear(w, None, kernel))])
    return out


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e6


def measure(layers, m: int, repeats: int) -> dict[str, float]:
    x = torch.randn(m, layers[0][1].shape[1])
    fns = {"q4": lambda: [q(x) for q, _, _ in layers], "torch": lambda: [F.linear(x, w) for _, w, _ in layers],
           "f32": lambda: [p(x) for _, _, p in layers]}
    times = {k: [] for k in fns}
    for fn in fns.values():
        fn()  # warm-up
    for _ in range(repeats):
        for k, fn in fns.items():
            times[k].append(timed(fn))
    return {k: min(v) for k, v in times.items()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=15)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    q4 = load(device="cpu", dtype="float32", weights="q4").fast
    with torch.inference_mode():
        found = {shape: {m: measure(layers, m, args.repeats) for m in ROWS}
                 for shape, (_, layers) in variants(q4, q4.kernel).items()}
    labels = {shape: label for shape, (label, _) in variants(q4, q4.kernel).items()}
    info = machine.describe()
    print(f"{info.get('cpu', '?')}, {args.threads} threads, torch {torch.__version__}, "
          f"4-bit path {q4.kernel.quant_path()}; best of {args.repeats}, microseconds\n")
    for title, key in (("4-bit products / torch", "q4"), ("float32 products / torch", "f32")):
        print(f"{title}:\n\n| shape | " + " | ".join(f"{m} row{'s' * (m > 1)}" for m in ROWS) + " |")
        print("|---|" + "---|" * len(ROWS))
        for shape, row in found.items():
            cells = [f"{r[key]:,.0f} / {r['torch']:,.0f} ({r[key] / r['torch']:.2f}x)" for r in row.values()]
            print(f"| {labels[shape]} | " + " | ".join(cells) + " |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
