"""The measured cost of one forward pass by the tokens it carries (assets/traces/forward_cost.json, written by
scripts/record_traces.py), as multiples of the one-token pass: paradec's forward at each precision it measured.
What a verify pass over n tokens costs in AR steps, and so the τ a step must beat for verifying alone to pay."""
from __future__ import annotations

from .machine import hardware
from .roofline import Hardware

PRECISIONS = {"q4": "4-bit", "f32": "float32"}  # a target's weights (a curve's, a live run's), as the pages name them


def curves(cost: dict) -> dict[str, dict[int, float]]:
    """weights (q4, f32) -> tokens in the pass -> paradec's measured median ms (Hugging Face's curve left out)."""
    out: dict[str, dict[int, float]] = {}
    for name, curve in cost.get("curves", {}).items():
        if name.startswith("paradec"):
            out.setdefault(curve.get("weights", "f32"), dict(zip(cost["tokens"], curve["median_ms"])))
    return out


def ratio(ms: dict[int, float], n: int) -> float:
    """A pass of n tokens in one-token passes, linear between the measured widths around n (the widest measured
    beyond them)."""
    n = min(n, max(ms))
    lo = max(k for k in ms if k <= n)
    hi = min((k for k in ms if k >= n), default=lo)
    at = ms[lo] if hi == lo else ms[lo] + (ms[hi] - ms[lo]) * (n - lo) / (hi - lo)
    return at / ms[1]


def widest_paying(ms: dict[int, float], tau: float) -> int | None:
    """The most tokens a verify pass may carry while it costs fewer one-token passes than the τ a step commits
    (drafting left out: it only narrows this); None when even two tokens cost more."""
    fits = [n for n in sorted(ms) if n >= 2 and ratio(ms, n) < tau]
    return fits[-1] if fits else None


def timed(cost: dict) -> tuple[Hardware, dict] | None:
    """The roof the curves were timed under (the probe at their threads, saved with them) and the passes to place
    on it ({'context', 'curves'}: paradec.plots.roofline), or None for a file without its probe."""
    if "machine" not in cost:
        return None
    return hardware(cost["machine"], "Recording machine"), {"context": cost["context_tokens"], "curves": curves(cost)}
