"""Jacobi and Lookahead decoding: greedy output equals AR's over a grid of settings, the
Lookahead mask and position ids for a hand-drawn configuration, and every window row's
logits equal those of its own trajectory run alone."""
import itertools

import pytest
import torch

from paradec.catalog import METHODS
from paradec.core.drafter import Drafter
from paradec.core.engine import decode
from paradec.core.sampling import Sampler
from paradec.core.steps import Draft
from paradec.core.targets import HFCache as DynamicCache
from paradec.core.tree import ancestors, mask_rows
from paradec.core.verify import target_forward
from paradec.drafters.jacobi import Jacobi
from paradec.drafters.lookahead import Lookahead

from helpers import build, tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")

V = 32
PROMPTS = [[1, 5, 7, 9, 5, 7, 3, 2, 5, 7], [4, 4, 4, 4], [9, 3, 12, 30, 2, 9, 3, 12, 30, 2, 9]]


@pytest.fixture(scope="module")
def model():
    m = tiny_model(V, seed=3)
    with torch.no_grad():  # peakier distributions: the tiny model then repeats itself, as LMs do
        m.lm_head.weight.mul_(6.0)
    return m


def generate(model, drafter, prompt, n=40):
    steps = list(decode(model, drafter, prompt, n, Sampler(), torch.Generator().manual_seed(0)))
    return [t for s in steps for t in s.tokens], steps


@pytest.mark.parametrize("prompt", PROMPTS)
def test_jacobi_greedy_equals_ar(model, prompt):
    expected, _ = generate(model, Drafter(), prompt)
    for block, init in itertools.product([1, 2, 5, 16], METHODS["jacobi"].param("init").choices):
        tokens, steps = generate(model, build(Jacobi, block=block, init=init), prompt)
        assert tokens == expected, (block, init)
        assert all(len(s.tokens) >= 1 and len(s.record.block) == block for s in steps)


@pytest.mark.parametrize("prompt", PROMPTS)
def test_lookahead_greedy_equals_ar(model, prompt):
    expected, _ = generate(model, Drafter(), prompt)
    accepted = 0
    for w, n, g in itertools.product([1, 3, 5], [2, 3, 5], [0, 1, 4]):
        tokens, steps = generate(model, build(Lookahead, window=w, ngram=n, candidates=g), prompt)
        assert tokens == expected, (w, n, g)
        accepted += sum(len(s.accepted) for s in steps)
    assert accepted > 0  # the pool really proposed n-grams that the target took


def test_jacobi_trajectory_is_recorded(model):
    _, steps = generate(model, build(Jacobi, block=4), PROMPTS[0], n=12)
    first = steps[0].record
    assert first.changed == [True] * 4  # nothing to compare the first guesses with
    for s in steps:
        assert len(s.accepted) <= 4 and s.verified == len(s.record.block) + (1 if s.index else len(PROMPTS[0]))


def test_lookahead_mask_hand_drawn():
    """W=3, N=3, G=2 with candidates (a, b) and (c, d). Block: 0 = pending token P,
    1 a, 2 b, 3 c, 4 d (verification branch), then the window: level 0 = [P, x1, x2]
    (P is the pending token itself), level 1 = [y0, y1, y2]: 5 x1, 6 x2, 7 y0, 8 y1, 9 y2."""
    la = build(Lookahead, window=3, ngram=3, candidates=2)
    la.begin([])
    la.levels = [[0, 21, 22], [30, 31, 32]]
    la.pool = {7: [(1, 2), (3, 4)]}
    d = la.propose([5, 7], Sampler(), None)
    assert d.tokens == [1, 2, 3, 4] and d.parents == [-1, 0, -1, 2]
    assert d.window == [21, 22, 30, 31, 32]
    assert d.window_pos == [1, 2, 1, 2, 3]  # column i of level j sits at offset i + j
    X = True
    o = False
    expected = [
        # P  a  b  c  d x1 x2 y0 y1 y2
        [X, o, o, o, o, o, o, o, o, o],  # P
        [X, X, o, o, o, o, o, o, o, o],  # a
        [X, X, X, o, o, o, o, o, o, o],  # b: sees its candidate's prefix
        [X, o, o, X, o, o, o, o, o, o],  # c: not the other candidate
        [X, o, o, X, X, o, o, o, o, o],  # d
        [X, o, o, o, o, X, o, o, o, o],  # x1: level 0 is causal
        [X, o, o, o, o, X, X, o, o, o],  # x2
        [X, o, o, o, o, o, o, X, o, o],  # y0: P, then its own column
        [X, o, o, o, o, X, o, o, X, o],  # y1: P x1 | y1
        [X, o, o, o, o, X, X, o, o, X],  # y2: P x1 x2 | y2
    ]
    assert mask_rows(d.parents, d.window_sees) == expected


def test_window_rows_equal_their_trajectories(model):
    ctx = PROMPTS[0]
    la = build(Lookahead, window=4, ngram=4, candidates=2)
    la.begin(ctx)
    la.levels = [[0, 3, 8, 9], [1, 2, 3, 4], [5, 6, 7, 8]]
    la.pool = {ctx[-1]: [(1, 2, 3), (1, 4, 4)]}
    d = la.propose(ctx, Sampler(), None)
    with torch.no_grad():
        cache = DynamicCache()
        target_forward(model, cache, ctx[:-1], Draft())  # prefill all but the pending token
        logits = target_forward(model, cache, [ctx[-1]], d).logits
        block = [ctx[-1]] + d.tokens + d.window
        for row, sees in enumerate(mask_rows(d.parents, d.window_sees)):
            seq = ctx[:-1] + [block[k] for k, seen in enumerate(sees) if seen]
            alone = model(torch.tensor([seq])).logits[0, -1]
            torch.testing.assert_close(logits[row], alone, atol=1e-5, rtol=0)
    assert d.parents == [-1, 0, 1, 0, 3]  # the two candidates share their first token
    assert [d.tokens[a] for a in ancestors(d.parents, 4)] == [1, 4, 4]


def test_pool_collects_one_ngram_per_column(model):
    la = build(Lookahead, window=3, ngram=3, candidates=2)
    _, steps = generate(model, la, PROMPTS[0], n=6)
    for s in steps:
        assert len(s.record.added) == 3 and all(len(g) == 3 for g in s.record.added)
        assert len(s.record.levels) == 2


@pytest.mark.parametrize("g", [1, 2])
def test_trace_alone_rebuilds_pool_window_and_mask(model, g):
    """What the app draws without torch: the pool replayed from the steps' 'added' n-grams gives
    the candidates each step really took, and the recorded window_sees give the combined mask."""
    from paradec.plots.lookahead import pool_before
    from paradec.plots.mask import mask_matrix
    from paradec.traces.trace import Trace

    _, steps = generate(model, build(Lookahead, window=3, ngram=3, candidates=g), PROMPTS[0], n=30)
    trace = Trace("lookahead", {"window": 3, "ngram": 3, "candidates": g}, "tiny", "", PROMPTS[0], {}, 30, steps)
    trace = Trace.from_json(trace.to_json())  # the JSON round trip keeps all of it
    assert sum(len(s.record.candidates) for s in trace.steps) > 0
    for i, s in enumerate(trace.steps):
        pending = trace.steps[i - 1].tokens[-1] if i else PROMPTS[0][-1]
        assert pool_before(trace, i).get(pending, []) == s.record.candidates
        z, _, _ = mask_matrix(trace, i)
        assert (len(z) == 1 + len(s.nodes) + len(s.record.window_sees)
                == s.verified - (len(PROMPTS[0]) - 1 if i == 0 else 0))
