"""Sampling: rejection sampling gives exactly the target's distribution.

(a) paradec.core.verify.accept on synthetic p and q over a small vocabulary: one drafted node
    drawn from q, a deterministic (one-hot) proposal, sibling nodes (accept walks them in
    turn, moving to the residual after each rejection), a two-node chain (the joint of the
    first two committed tokens), and top-k/top-p shaped distributions. The committed
    tokens' empirical distribution is compared with the exact one by a chi-square
    goodness-of-fit test.
(b) End to end on tiny random models: the first two tokens of sps (a full draft and one scoring half the
    vocabulary), pld, Jacobi and Lookahead against plain autoregressive sampling's exact joint, at temperature 1
    and with top-k/top-p, the target in float32 run by Hugging Face's own forward (the engine off the CPU;
    test_sampling_e2e runs paradec's CPU forward); and the shaped setting again with the target's GGUF file on the
    4-bit engine (its own distribution, exactly enumerated the same way). The draft runs on paradec's CPU forward.

Statistics: every test rejects at significance ALPHA = 1e-3, with bins whose expected
count is below 5 merged. The generators use fixed seeds (0, or the run index), chosen
before looking at any result and never tuned: the tests are deterministic, and for a
random seed a correct implementation would fail each one with probability 1e-3.
test_the_test_has_power shows the same test catching a classic bug (resampling from p
instead of the residual) at these sample sizes.
"""
from collections import Counter

import pytest
import torch

import paradec.core.verify
from paradec.core.engine import decode
from paradec.core.sampling import Sampler, residual
from paradec.core.steps import Draft
from paradec.core.verify import accept
from paradec.cpu.fast import FastTarget
from paradec.cpu.quant import QuantModel
from paradec.drafters.jacobi import Jacobi
from paradec.drafters.lookahead import Lookahead
from paradec.drafters.pld import PromptLookup
from paradec.drafters.sps import SpeculativeSampling
from paradec.drafters.subset import VocabSubset
from paradec.models.draft_model import SubsetDraft

from gguf_files import Logits, write
from helpers import build, tiny_model
from stats import ALPHA, chi2_sf, exact_joint, gof_pvalue, two_sample_pvalue

pytestmark = pytest.mark.usefixtures("one_thread")

@pytest.mark.parametrize(
    "x, df, expected",  # textbook critical values
    [(3.841, 1, 0.05), (5.991, 2, 0.05), (7.815, 3, 0.05), (18.307, 10, 0.05), (29.588, 10, 0.001),
     (10.828, 1, 0.001), (16.266, 3, 0.001), (0.0, 4, 1.0), (124.342, 100, 0.05)],
)
def test_chi2_sf_matches_tables(x, df, expected):
    assert chi2_sf(x, df) == pytest.approx(expected, abs=2e-4)


def test_two_sample_test_separates():
    same = Counter({i: 250 for i in range(4)})
    assert two_sample_pvalue(same, same) == pytest.approx(1.0)
    assert two_sample_pvalue(same, Counter({0: 400, 1: 200, 2: 200, 3: 200})) < ALPHA


# ---------------------------------------------------------------- the Sampler by hand

def test_sampler_shapes_by_hand():
    logits = torch.tensor([2.0, 1.0, 0.0, -1.0]).log_softmax(-1)  # p ~ [.64, .24, .09, .03]
    p = torch.softmax(logits, -1)
    torch.testing.assert_close(Sampler().probs(logits), p)  # greedy keeps the plain softmax
    torch.testing.assert_close(Sampler(temperature=1.0).probs(logits), p)
    torch.testing.assert_close(Sampler(temperature=0.5).probs(logits), torch.softmax(logits * 2, -1))
    top2 = Sampler(temperature=1.0, top_k=2).probs(logits)
    torch.testing.assert_close(top2, torch.cat([p[:2] / p[:2].sum(), torch.zeros(2)]))
    # nucleus: the smallest set of most likely tokens whose mass reaches top_p
    probs = torch.tensor([0.5, 0.3, 0.15, 0.05])
    torch.testing.assert_close(Sampler(temperature=1.0, top_p=0.8).probs(probs.log()),
                               torch.tensor([0.625, 0.375, 0, 0]))
    torch.testing.assert_close(Sampler(temperature=1.0, top_p=0.81).probs(probs.log()),
                               torch.tensor([0.5, 0.3, 0.15, 0]) / 0.95)
    torch.testing.assert_close(Sampler(temperature=1.0, top_p=0.1).probs(probs.log()), torch.tensor([1.0, 0, 0, 0]))
    assert Sampler(temperature=1.0, top_k=10).probs(logits).shape == (4,)  # k above the vocabulary: off


def test_sampler_picks():
    p = torch.tensor([0.1, 0.6, 0.3])
    assert Sampler().pick(p, None) == 1
    draws = lambda: [Sampler(temperature=1.0).pick(p, g) for g in [torch.Generator().manual_seed(5)] for _ in range(50)]
    assert draws() == draws()  # the run's own generator makes a run reproducible
    assert Sampler(temperature=1.0).pick(torch.tensor([0.0, 0.0, 1.0]), None) == 2


# ---------------------------------------------------------------- (a) accept on synthetic p, q

P = torch.tensor([0.30, 0.20, 0.15, 0.10, 0.10, 0.08, 0.05, 0.02])
Q1 = torch.tensor([0.05, 0.10, 0.30, 0.25, 0.05, 0.05, 0.15, 0.05])
Q2 = torch.tensor([0.40, 0.02, 0.02, 0.02, 0.30, 0.02, 0.02, 0.20])
Q_SUBSET = torch.tensor([0.0, 0.50, 0.0, 0.30, 0.0, 0.0, 0.20, 0.0])  # a draft over a vocabulary subset
TRIALS = 3000
SAMPLE = Sampler(temperature=1.0)
SHAPED = Sampler(temperature=1.0, top_k=6, top_p=0.85)


def _first_committed(draft: Draft, logits, sampler, gen) -> int:
    out = accept(draft, logits, sampler, gen)
    return draft.tokens[out.path[0]] if out.path else out.last


def _simulate(proposals, sampler=SAMPLE, trials=TRIALS, seed=0) -> Counter:
    """proposals: one entry per child of the root, a raw q (sampled from, after the
    sampler's shaping, as a drafter does) or an int (a deterministic proposal, q = None)."""
    gen = torch.Generator().manual_seed(seed)
    qs = [None if isinstance(pr, int) else sampler.probs(pr.log()) for pr in proposals]
    logits = P.log().expand(len(proposals) + 1, -1)  # the target's p at the root (other rows unused)
    counts = Counter()
    for _ in range(trials):
        tokens = [pr if q is None else int(torch.multinomial(q, 1, generator=gen)) for pr, q in zip(proposals, qs)]
        # all deterministic: q = [], as prompt lookup leaves it; otherwise None marks a one-hot q
        draft = Draft(tokens=tokens, parents=[-1] * len(tokens), q=qs if any(q is not None for q in qs) else [])
        counts[_first_committed(draft, logits, sampler, gen)] += 1
    return counts


def _exact(sampler) -> dict:
    p = sampler.probs(P.log())
    return {i: float(p[i]) for i in range(len(p))}


CASES = {
    "one node drawn from q": [Q1],
    "one node, another q": [Q2],
    "deterministic proposal of a likely token": [0],
    "deterministic proposal of an unlikely token": [7],
    "two siblings, each drawn from its own q": [Q1, Q2],
    "two siblings drawn from the same q": [Q1, Q1],
    "two deterministic siblings": [2, 0],
    "two deterministic siblings, same token": [3, 3],
    "sampled then deterministic sibling": [Q2, 1],
    "three siblings": [4, Q1, Q2],
    "q zero outside a vocabulary subset": [Q_SUBSET],
}


@pytest.mark.parametrize("name", CASES)
def test_accept_preserves_the_target_distribution(name):
    counts = _simulate(CASES[name])
    assert gof_pvalue(counts, _exact(SAMPLE)) > ALPHA, counts


@pytest.mark.parametrize("proposals", [[Q1], [Q1, 5], [0]], ids=["q", "q+one-hot", "one-hot"])
def test_accept_preserves_top_k_top_p_shaped_distribution(proposals):
    counts = _simulate(proposals, sampler=SHAPED)
    exact = _exact(SHAPED)
    assert all(counts[t] == 0 for t, pr in exact.items() if pr == 0)  # never a token the shaping removed
    assert gof_pvalue(counts, exact) > ALPHA, counts


def test_the_test_has_power(monkeypatch):
    """The same test, sample size and seed reject a broken rule: after a rejection,
    sampling from p itself instead of norm(max(0, p - q))."""
    monkeypatch.setattr(paradec.core.verify, "residual", lambda p, q: p)
    assert gof_pvalue(_simulate([Q1]), _exact(SAMPLE)) < ALPHA


def test_residual():
    r = residual(P, Q1)
    expected = torch.clamp(P - Q1, min=0)
    torch.testing.assert_close(r, expected / expected.sum())
    torch.testing.assert_close(residual(P, P), P)  # nothing left: stays well defined


def test_chain_of_two_preserves_the_joint_distribution():
    """A drafted chain x1 -> x2 (each from q); the target's p after x1 depends on x1.
    The first two committed tokens must be distributed as p0(a) p1(b | a)."""
    v = 6
    gen = torch.Generator().manual_seed(0)
    p0 = torch.tensor([0.35, 0.25, 0.15, 0.12, 0.08, 0.05])
    p1 = torch.softmax(torch.randn(v, v, generator=gen) * 1.5, dim=-1)  # p1[a] = p( . | a)
    q1 = torch.tensor([0.10, 0.40, 0.05, 0.20, 0.05, 0.20])
    q2 = torch.softmax(torch.randn(v, v, generator=gen), dim=-1)  # the draft's q( . | x1)
    p2_any = torch.full((v,), 1.0 / v)  # the target after x2: only reached as a bonus token's p
    counts = Counter()
    for _ in range(6000):
        x1 = int(torch.multinomial(q1, 1, generator=gen))
        x2 = int(torch.multinomial(q2[x1], 1, generator=gen))
        logits = torch.stack([p0.log(), p1[x1].log(), p2_any.log()])
        draft = Draft(tokens=[x1, x2], parents=[-1, 0], q=[q1, q2[x1]])
        out = accept(draft, logits, SAMPLE, gen)
        committed = [draft.tokens[i] for i in out.path] + [out.last]
        if len(committed) == 1:  # x1 rejected: the second token is the next step's, drawn from p1
            committed.append(int(torch.multinomial(p1[committed[0]], 1, generator=gen)))
        counts[tuple(committed[:2])] += 1
    exact = {(a, b): float(p0[a] * p1[a, b]) for a in range(v) for b in range(v)}
    assert gof_pvalue(counts, exact) > ALPHA


# ---------------------------------------------------------------- (b) end to end on tiny models

V = 16
RUNS = {"t1": 2000, "shaped": 1000}  # per method; a run is 1-4 forwards of a one-layer model
SHARP = 15.0  # scales the LM heads: random tiny models are near uniform, this makes p and q differ


def _sharp(model):
    with torch.no_grad():
        model.lm_head.weight.mul_(SHARP)
    return model


@pytest.fixture(scope="module")
def pair():
    return _sharp(tiny_model(V, seed=0, layers=1, hidden=32)), _sharp(tiny_model(V, seed=1, layers=1, hidden=32))


@pytest.fixture(scope="module")
def quant(pair, tmp_path_factory):
    """The target's GGUF file on the 4-bit engine (paradec.cpu.quant): its own distribution, tested the same way."""
    return QuantModel(write(pair[0], tmp_path_factory.mktemp("q4") / "target.gguf"))


@pytest.fixture(scope="module")
def prompt(pair):
    """A prompt [a, b, c, a, b]: prompt lookup proposes c, a, b. Of a few seeded candidates,
    the one where the target gives c a probability nearest 1/2, so that both acceptance
    and rejection happen often."""
    target = pair[0]
    rng = torch.Generator().manual_seed(0)
    best = None
    for _ in range(20):
        a, b, c = (int(t) for t in torch.randint(0, V, (3,), generator=rng))
        ids = [a, b, c, a, b]
        with torch.no_grad():
            p = SAMPLE.probs(target(input_ids=torch.tensor([ids])).logits[0, -1])
        score = abs(float(p[c]) - 0.5)
        best = min(best or (score, ids), (score, ids))
    return best[1]


def _first_two(model, make_drafter, prompt, sampler, runs, seed0) -> tuple[Counter, int]:
    counts, accepted = Counter(), 0
    for i in range(runs):
        gen = torch.Generator().manual_seed(seed0 + i)
        steps = list(decode(model, make_drafter(), prompt, 2, sampler, gen))
        counts[tuple(t for s in steps for t in s.tokens)] += 1
        accepted += sum(len(s.accepted) for s in steps)
    return counts, accepted




SETTINGS = {"t1": SAMPLE, "shaped": Sampler(temperature=0.8, top_k=5, top_p=0.9)}


class SeededLookahead(Lookahead):
    """Lookahead whose pool starts full: two candidate n-grams (siblings, one-hot q) under
    every token, so the sampling rule is exercised from the first step on."""

    def begin(self, prompt_ids):
        super().begin(prompt_ids)
        a, b, c = prompt_ids[:3]
        self.pool = {t: [(c, a), (a, b)] for t in range(V)}


class SeededJacobi(Jacobi):
    """Jacobi whose fresh guesses continue the prompt's pattern (c, a, b), as prompt lookup
    would: guesses the target often takes, so acceptance and rejection both happen."""

    def _fill(self, ctx, k, gen):
        return (ctx[2:5] * k)[:k]


def _drafter(method: str, draft):
    """The draft runs on paradec's CPU forward in float32, as a run's draft does (a tenth of Hugging Face's time)."""
    subset = FastTarget.of_draft(SubsetDraft(draft, VocabSubset(torch.arange(0, V, 2), V)))
    draft = FastTarget(draft)
    return {
        "sps": lambda: build(SpeculativeSampling, draft, k=2),
        # the same draft scoring half the vocabulary (the trained draft's shape): q is 0 elsewhere
        "sps-subset": lambda: build(SpeculativeSampling, subset, k=2),
        "pld": lambda: build(PromptLookup, k=3),
        "jacobi": lambda: build(SeededJacobi, block=3),
        "lookahead": lambda: SeededLookahead(window=3, ngram=3, candidates=2),
    }[method]


@pytest.mark.slow
@pytest.mark.parametrize("weights, setting", [("f32", "t1"), ("f32", "shaped"), ("q4", "shaped")])
@pytest.mark.parametrize("method", ["sps", "sps-subset", "pld", "jacobi", "lookahead"])
def test_first_two_tokens_match_autoregressive_sampling(pair, quant, prompt, setting, method, weights):
    target, draft = (pair[0], pair[1]) if weights == "f32" else (quant, pair[1])
    sampler, runs = SETTINGS[setting], RUNS[setting]
    make = _drafter(method, draft)
    counts, accepted = _first_two(target, make, prompt, sampler, runs, seed0=0)
    assert accepted > 0.05 * runs  # drafts were accepted often (and rejected: see the prompt fixture)
    exact = exact_joint(target if weights == "f32" else Logits(target), prompt, sampler, 2)
    assert gof_pvalue(counts, exact) > ALPHA, counts.most_common(8)
