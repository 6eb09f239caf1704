"""Faults and load on one process: a live run stopped half way (its generator closed, as a
Streamlit rerun or a closed tab does) leaves the shared model as it was and the next run
gives what it gives alone; many runs in a row keep Python's memory bounded (no per-run
leak). Tiny random model, one thread."""
import gc
import tracemalloc

import pytest
import torch

from paradec import methods
from paradec.core.engine import decode
from paradec.core.sampling import Sampler

from helpers import tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")

PROMPT = [3, 14, 15, 9, 2, 6, 3, 14, 15, 9]


@pytest.fixture(scope="module")
def target():
    return tiny_model(64, seed=0)


def tokens(target, method="lookahead", n=24):
    steps = decode(target, methods.make_drafter(method, methods.parse_params(method, {})), PROMPT, n, Sampler())
    return [t for s in steps for t in s.tokens]


@pytest.mark.parametrize("method", ["pld", "jacobi", "lookahead"])
def test_a_run_stopped_half_way_corrupts_nothing(target, method):
    alone = tokens(target, method)
    before = {k: v.clone() for k, v in target.state_dict().items()}
    run = decode(target, methods.make_drafter(method, methods.parse_params(method, {})), PROMPT, 24, Sampler())
    next(run), next(run)
    run.close()  # what Python does to a generator whose consumer went away
    assert all(torch.equal(before[k], v) for k, v in target.state_dict().items())
    assert tokens(target, method) == alone


@pytest.mark.slow
def test_repeated_runs_keep_memory_bounded(target):
    for _ in range(3):  # warm-up: caches and lazily built tables are allocated once
        tokens(target)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(30):
            tokens(target)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert grown < 2 * 2**20, f"{grown / 2**20:.1f} MiB more after 30 runs"
