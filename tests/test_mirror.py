"""Parallel draft-and-verify (mirror): the worker's bets change when tokens are drafted, never
which tokens are committed: greedy equals AR, sampling keeps the target's distribution."""
from __future__ import annotations

import copy
import threading
import time
from collections import Counter

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from test_decoders import FEW, V, ar, check_steps, generate, models  # noqa: F401 (fixture)

from paradec.core.drafter import Drafter
from paradec.core.engine import decode
from paradec.core.sampling import Sampler
from paradec.drafters.mirror import Mirror
from paradec.methods import InputError, make_drafter, parse_params

from helpers import build

pytestmark = pytest.mark.usefixtures("one_thread")


@FEW
@given(prompt=st.lists(st.integers(0, V - 1), min_size=1, max_size=12), n=st.integers(1, 40), k=st.integers(1, 6),
       parallel=st.booleans(), draft=st.sampled_from(["self", "never", "other"]))
@pytest.mark.slow
def test_greedy_equals_ar(models, prompt, n, k, parallel, draft):  # noqa: F811
    out, steps = generate(models["target"], build(Mirror, models[draft], k=k, parallel=parallel), prompt, n)
    assert out == ar(models, prompt, n)
    check_steps(steps, n)


class Slow(torch.nn.Module):
    """A target whose forward takes at least `seconds`: a real target's verify pass is long next
    to a draft token, which is what gives the worker time to draft its bets."""

    def __init__(self, model, seconds=0.05):
        super().__init__()
        self.inner, self.seconds = model, seconds
        self.device, self.dtype, self.config = model.device, model.dtype, model.config

    def forward(self, **kw):
        time.sleep(self.seconds)
        return self.inner(**kw)


@pytest.mark.slow
@pytest.mark.serial  # on a clock (the worker's drafting against a 0.25-s verify pass): run alone, not beside others
def test_a_perfect_draft_wins_its_bets_and_its_chains_leave_the_critical_path(models):  # noqa: F811
    """The draft is a peaked target itself: every chain is accepted and the bonus is q's favourite
    after it, its likeliest bet. With a verify pass long enough for the bets, each proposal after the
    first was drafted during the previous pass."""
    peaked = copy.deepcopy(models["target"])
    with torch.no_grad():
        peaked.lm_head.weight.mul_(4.0)
    out, steps = generate(Slow(peaked, 0.25), build(Mirror, peaked, k=3), [1, 2, 3], 40)
    assert out == [t for s in decode(peaked, Drafter(), [1, 2, 3], 40, Sampler()) for t in s.tokens]
    assert steps[0].record.hit is None  # nothing was running before the first step
    assert all(s.record.hit for s in steps[1:])
    assert all(len(s.tokens) == 4 for s in steps[:-1])  # k accepted + the bonus, one forward each
    for prev, s in zip(steps, steps[1:]):
        start, end = s.record.prefetch
        assert prev.start_ms <= start <= end  # the worker drafted after the previous proposal
        assert start < prev.start_ms + prev.draft_ms + prev.verify_ms  # ... while its verify pass ran
        assert s.record.outcome[0] == 3 and s.record.outcome in [b[:2] for b in s.record.bets]
        assert s.draft_ms < prev.verify_ms / 2  # propose() only handed the chain over


def test_bets_are_ranked_and_a_lost_bet_drafts_the_outcome_now(models):  # noqa: F811
    out, steps = generate(Slow(models["target"]), build(Mirror, models["other"], k=3, bets=5), [5, 6, 7], 30)
    assert out == ar(models, [5, 6, 7], 30)
    assert all(s.record.bets for s in steps[1:])  # the worker ran each round (a failing one bets nothing)
    for s in steps[1:]:
        chances = [c for _, _, c, _ in s.record.bets]
        assert len(chances) <= 5 and chances == sorted(chances, reverse=True)
        drafted = {(j, b) for j, b, _, d in s.record.bets if d}
        assert s.record.hit == (tuple(s.record.outcome) in drafted)


def test_a_draft_that_never_agrees_bets_on_its_corrections(models):  # noqa: F811
    """Every first token is rejected: the outcome is always (0, the target's token), and a bet pays
    only when that token was among q's runners-up that the worker drafted after."""
    out, steps = generate(Slow(models["target"]), build(Mirror, models["never"], k=3), [5, 6], 20)
    assert out == ar(models, [5, 6], 20)
    for s in steps[1:]:
        assert s.record.outcome[0] == 0


def test_sequential_mode_starts_no_worker(models):  # noqa: F811
    before = threading.active_count()
    _, steps = generate(models["target"], build(Mirror, models["self"], k=3, parallel=False), [1, 2, 3], 20)
    assert threading.active_count() == before
    assert all(s.record.prefetch is None for s in steps)


def test_the_seed_reproduces_a_sampled_run(models):  # noqa: F811
    def run(seed):
        drafter = build(Mirror, models["other"], k=2)
        steps = decode(models["target"], drafter, [1, 2], 30, Sampler(temperature=1.0),
                       torch.Generator().manual_seed(seed))
        return [t for s in steps for t in s.tokens]

    assert run(7) == run(7)
    assert run(7) != run(8)


def _counts(target, make, seed0, runs=1000):
    counts = Counter()
    for i in range(runs):
        steps = decode(target, make(), [1, 2, 3, 1, 2], 3, Sampler(temperature=1.0),
                       torch.Generator().manual_seed(seed0 + i))
        counts[tuple(t for s in steps for t in s.tokens)] += 1
    return counts


@pytest.mark.slow
def test_sampling_keeps_the_targets_distribution(models):  # noqa: F811
    """Three tokens with k=1: the third is the worker's chain whenever its bet paid (always tried with the
    target as its own draft, where bets mostly pay; a draft that differs, with its mistakes injected, is
    test_sampling_e2e's). Chi-square test at 1e-3 against plain autoregressive sampling's exact distribution. Both
    run on paradec's CPU forward, as a run on the CPU does."""
    from paradec.cpu.fast import FastTarget

    from gguf_files import Logits
    from stats import ALPHA, exact_joint, gof_pvalue

    target = FastTarget(models["target"])
    got = _counts(target, lambda: build(Mirror, target, k=1), 0)
    exact = exact_joint(Logits(target), [1, 2, 3, 1, 2], Sampler(temperature=1.0), 3)
    assert gof_pvalue(got, exact) > ALPHA, got.most_common(6)


@pytest.mark.parametrize("params, message", [({"k": 0}, "k must be"), ({"draft_device": "tpu"}, "draft_device")])
def test_bad_parameters_are_one_line(models, params, message):  # noqa: F811
    with pytest.raises(InputError, match=message):
        make_drafter("mirror", parse_params("mirror", {"k": 4, **params}), models["self"])


def test_timeline_lanes_follow_the_run(models):  # noqa: F811
    """The Gantt's intervals: per step, drafting then the verify pass on the target's lane (never
    overlapping each other), the worker's drafting inside the run; the summary adds them up."""
    from paradec.plots import timeline
    from paradec.traces.trace import Trace

    for parallel in (False, True):
        drafter = build(Mirror, models["other"], k=2, parallel=parallel)
        _, steps = generate(Slow(models["target"], 0.02), drafter, [3, 4], 12)
        trace = Trace(method="mirror", params={"parallel": parallel}, model="tiny", prompt="", prompt_ids=[3, 4],
                      sampling={}, max_new_tokens=12, steps=steps, wall_s=1.0)
        ivs = timeline.intervals(trace)
        verify = [v for v in ivs if v["kind"] == "verify"]
        assert len(verify) == len(steps)
        assert all(a["end"] <= b["start"] + 1e-6 for a, b in zip(verify, verify[1:]))
        worker = [v for v in ivs if v["kind"] in ("hit", "miss")]
        assert bool(worker) == parallel and all(0 <= v["start"] <= v["end"] for v in worker)
        s = timeline.summary(trace)
        assert s["run"] == ("parallel" if parallel else "sequential") and s["target forwards"] == len(steps)
        assert s["drafting during verify (ms)"] == round(sum(v["end"] - v["start"] for v in worker))
        fig = timeline.gantt_figure(trace, "t", range(0, 3), until_ms=timeline.end_ms(trace, range(0, 3)))
        assert {b.name for b in fig.data} >= {"verify pass"}


def test_no_worker_outlives_its_run(models):  # noqa: F811
    """The last round's worker bets on an outcome the run already knows: the run's end stops and joins it,
    whether the run finished or its reader stopped after one step."""
    before = threading.active_count()
    list(decode(models["target"], build(Mirror, models["other"], k=3, bets=4), [3, 4, 5], 12, Sampler()))
    assert threading.active_count() == before
    steps = decode(models["target"], build(Mirror, models["other"], k=3, bets=4), [3, 4, 5], 12, Sampler())
    next(steps)
    steps.close()
    assert threading.active_count() == before
