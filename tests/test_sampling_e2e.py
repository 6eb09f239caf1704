"""Sampling end to end: with temperature, top-k and top-p, every method's first tokens are distributed
exactly as plain autoregressive sampling's, over several steps and through bonus tokens.

A chain (sps), a tree (EAGLE, a static tree with siblings) and a deterministic proposal (prompt lookup)
decode 7 tokens from a tiny random model, each run with its own seed; the runs take 3 to 7 steps and
reach bonus tokens, accepted drafts and rejections. The reference is exact: the distribution of each
of the first 7 tokens under autoregressive sampling, by enumerating every prefix (stats.exact_marginals).
One goodness-of-fit test per position, Bonferroni-combined, at ALPHA = 1e-3.

The tests have power: two plausible mistakes, injected below, make them fail at the same sample sizes:
(a) the bonus token drawn from the plain softmax instead of the shaped p;
(b) the verifier handed a q that is not the one the draft sampled from: the raw softmax, or only its
    temperature applied (top-k and top-p forgotten)."""
import copy

import pytest
import torch

import paradec.core.engine as engine
import paradec.drafters.draft_length as draft_length
from paradec.core.sampling import Sampler
from paradec.drafters import eagle_head
from paradec.drafters.eagle import Eagle
from paradec.drafters.pld import PromptLookup
from paradec.drafters.sps import SpeculativeSampling

from helpers import tiny_model
from stats import ALPHA, exact_marginals, marginals_pvalue

pytestmark = [pytest.mark.usefixtures("one_thread"), pytest.mark.slow]  # thousands of short runs

V, LENGTH = 12, 7
SAMPLER = Sampler(temperature=0.7, top_k=3, top_p=0.9)
PROMPT = [0, 4, 1, 2, 3, 1, 2, 3, 1, 2]  # repeats: prompt lookup finds n-grams to copy; it opens, as a
# chat template does, on tokens its end lacks (a token in both would read as a turn marker, see pld.begin)
RUNS = {"sps": 600, "eagle": 400, "pld": 1000}  # each enough to catch both mistakes (see the mutant tests)


@pytest.fixture(scope="module")
def target():
    model = tiny_model(V, seed=0, layers=1, hidden=32)
    with torch.no_grad():
        model.lm_head.weight.mul_(4.0)  # peakier than a random model: top-k and top-p both cut
    return model


@pytest.fixture(scope="module")
def exact(target):
    return exact_marginals(target, PROMPT, SAMPLER, LENGTH)


@pytest.fixture(scope="module")
def drafters(target, tmp_path_factory):
    """A draft close to the target (its LM head perturbed: accepted often, rejected sometimes), EAGLE's
    default-initialised head (its guesses pass the target's feature through, often accepted)."""
    draft = copy.deepcopy(target)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        draft.lm_head.weight.add_(torch.randn(draft.lm_head.weight.shape, generator=gen) * 0.1)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        head = eagle_head.EagleHead(target.config, 1, None)
    folder = tmp_path_factory.mktemp("eagle-head")
    eagle_head.save(head, folder, target.config, {"test": True})
    return {"sps": lambda: SpeculativeSampling(draft, k=2),
            "eagle": lambda: Eagle(target, head=str(folder), tree="[[0], [1], [0, 0], [2]]"),
            "pld": lambda: PromptLookup(k=3, ngram_max=2)}


def _runs(target, make, runs: int) -> tuple[list[list[int]], list]:
    samples, steps = [], []
    for seed in range(runs):
        run = list(engine.decode(target, make(), PROMPT, LENGTH, SAMPLER, torch.Generator().manual_seed(seed)))
        samples.append([t for s in run for t in s.tokens])
        steps.append(run)
    return samples, steps


@pytest.mark.parametrize("method", RUNS)
def test_the_first_tokens_follow_autoregressive_sampling(target, exact, drafters, method):
    samples, runs = _runs(target, drafters[method], RUNS[method])
    origins = [o for run in runs for s in run for o in s.origins]
    assert min(len(run) for run in runs) >= 3  # every run goes through at least 3 verify passes
    assert origins.count("bonus") > 0.2 * len(runs)  # bonus tokens are part of what is tested
    assert origins.count("accepted") > 0.5 * len(runs) and origins.count("resampled") > 0.5 * len(runs)
    assert marginals_pvalue(samples, exact) > ALPHA


# ---------------------------------------------------------------- the mistakes the tests must catch

def _bonus_from_plain_softmax(real):
    def accept(draft, logits, sampler, gen):
        out = real(draft, logits, sampler, gen)
        if out.last_origin == "bonus":  # mistake (a): the bonus ignores temperature, top-k and top-p
            out.last = int(torch.multinomial(torch.softmax(logits[out.last_row].float(), -1), 1, generator=gen))
        return out
    return accept


def _q_not_sampled_from(real, shape):
    def chain(continue_after, logits_after, feed, sampler, gen):
        handed = []

        def spy(tokens):
            logits = logits_after(tokens)
            handed.append(shape(logits, sampler))
            return logits

        tokens, _ = real(continue_after, spy, feed, sampler, gen)  # drawn from the right q ...
        return tokens, handed  # ... but another q goes to the verifier: mistake (b)
    return chain


MISTAKES = {
    "a: bonus from the plain softmax": ("accept", _bonus_from_plain_softmax),
    "b: q the raw softmax": ("chain", lambda real: _q_not_sampled_from(real, lambda x, s: torch.softmax(x, -1))),
    "b: q with temperature only": (
        "chain", lambda real: _q_not_sampled_from(real, lambda x, s: Sampler(temperature=s.temperature).probs(x))),
}


@pytest.mark.parametrize("method, mistake", [("sps", m) for m in MISTAKES] + [
    ("eagle", "a: bonus from the plain softmax"), ("pld", "a: bonus from the plain softmax")])
def test_an_injected_mistake_fails_the_test(target, exact, drafters, method, mistake, monkeypatch):
    where, inject = MISTAKES[mistake]
    module = engine if where == "accept" else draft_length
    monkeypatch.setattr(module, where, inject(getattr(module, where)))
    samples, _ = _runs(target, drafters[method], RUNS[method])
    assert marginals_pvalue(samples, exact) < ALPHA
