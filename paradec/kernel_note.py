"""`make run`'s line when paradec's C++ kernel cannot be built on this machine: why, and what it costs in speed as
the shipped benchmark measured it (its ar_torch row, paradec's forward on torch's products, against AR). Silent
when the kernel loads. Run in the background while the app starts (scripts/run.sh): it imports torch.

    python -m paradec.kernel_note"""
from __future__ import annotations

import json
import sys

from . import bench_report, claims
from .cpu import kernels
from .data import ASSETS

BENCH = ASSETS / claims.BENCH  # make bench's file, the one the pages quote


def measured() -> float | None:
    """AR's speed without the kernel over AR's with it, in the shipped benchmark (None: no ar_torch row)."""
    try:
        return bench_report.without_kernel(json.loads(BENCH.read_text()))
    except (OSError, ValueError):
        return None


def cost() -> str:
    """The measured cost, in words ("" when the benchmark has no ar_torch row)."""
    ratio = measured()
    return "" if ratio is None else f"AR at {ratio:.2f}x the kernel's speed in {BENCH.relative_to(ASSETS.parent)}"


def line() -> str:
    """One line when the kernel is not available ("" when it loads)."""
    try:
        if kernels.kernel() is not None:
            return ""
        why = kernels.why_not()
    except kernels.KernelError as e:
        why = str(e)
    said = cost()
    return (f"paradec: the C++ kernel is not available here ({why}): live runs use torch's matrix products on float32 "
            f"weights{f', {said}' if said else ''} (docs/kernel.md)")


def main() -> int:
    said = line()
    if said:
        print(said, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
