"""The cost model of one speculative step against autoregressive decoding.

AR spends one one-token forward per token. A speculative step spends a draft phase, one
verify forward over the tree and some overhead, and commits τ tokens on average. So

    speedup = τ · ar / (draft + verify + overhead)

and the step pays off only when τ exceeds its cost in AR steps: high acceptance still
loses when verifying (bigger batch, bigger tree, a compute-bound chip) or drafting costs
more than the tokens it wins. Pure Python, like paradec.costs.roofline."""
from __future__ import annotations

from dataclasses import dataclass

from . import roofline
from .roofline import Hardware, ModelShape


@dataclass(frozen=True)
class SpecStep:
    """Times of one step, in any one unit (seconds, ms or AR steps)."""

    ar: float  # one AR step: a one-token forward
    draft: float  # the whole draft phase of one speculative step
    verify: float  # the verify forward over the tree
    overhead: float = 0.0  # acceptance, bookkeeping, cache compaction

    @property
    def total(self) -> float:
        return self.draft + self.verify + self.overhead

    def speedup(self, tau: float) -> float:
        return tau * self.ar / self.total

    @property
    def break_even_tau(self) -> float:
        """The smallest τ that reaches 1x: the step's cost in AR steps."""
        return self.total / self.ar


def predict(hw: Hardware, m: ModelShape, dtype: str, tree: int, draft: float, overhead: float = 0.0,
            context: int = 512, batch: int = 1) -> SpecStep:
    """Roofline times for a tree of `tree` drafted tokens after `context` cached ones;
    draft and overhead are given in AR steps at the same batch (a draft model's passes get
    dearer with the batch much as the target's do)."""
    ar = roofline.forward_time(hw, m, dtype, 1, context, batch)
    verify = roofline.forward_time(hw, m, dtype, tree + 1, context, batch)  # the pending token + the tree
    return SpecStep(ar, draft * ar, verify, overhead * ar)


def first_losing(xs, speedup_at) -> int | None:
    """The first x (in order) whose speedup_at(x) is below 1x, or None if none loses."""
    return next((x for x in xs if speedup_at(x) < 1.0), None)


def chain_tau(alpha: float, k: int) -> float:
    """Expected τ of a k-token chain whose tokens are each accepted with probability alpha,
    independently (Leviathan et al. 2023): (1 − α^(k+1)) / (1 − α), the bonus token included."""
    return k + 1.0 if alpha >= 1.0 else (1 - alpha ** (k + 1)) / (1 - alpha)


def alpha_for_tau(tau: float, k: int) -> float | None:
    """The acceptance rate a k-token chain needs to reach τ (bisection: chain_tau grows with
    alpha); None when even α = 1 falls short (τ > k + 1)."""
    if tau > k + 1:
        return None
    lo, hi = 0.0, 1.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if chain_tau(mid, k) < tau else (lo, mid)
    return hi


def measured(trace, ar_trace) -> tuple[SpecStep, float]:
    """A recorded run's mean step costs (ms) against a recorded AR run of the same prompt, and
    its τ. The first step (the prefill) is left out of both, as is the time between steps; a
    step's verify_ms includes its acceptance, so the overhead is inside verify here."""
    steps, ar_steps = trace.steps[1:], ar_trace.steps[1:]
    if not steps or not ar_steps:
        raise ValueError("both runs need more than one step")
    cost = SpecStep(_mean([s.verify_ms for s in ar_steps]), _mean([s.draft_ms for s in steps]),
                    _mean([s.verify_ms for s in steps]))
    tau = sum(len(s.tokens) for s in steps) / sum(s.target_forwards for s in steps)
    return cost, tau


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)
