"""Sampling end to end: with temperature, top-k and top-p, every method's first tokens are distributed
exactly as plain autoregressive sampling's, over several steps and through bonus tokens.

A chain (sps), a chain drafted by the target's own first layer and an adapter over a vocabulary subset
(early exit), chains drafted while the target verifies (mirror), a tree (EAGLE, a static tree with
siblings) and a deterministic proposal (prompt lookup) decode 7 tokens from a tiny random model, each run
with its own seed; the runs take 3 to 7 steps and reach bonus tokens, accepted drafts and rejections. The
reference is exact: the distribution of each of the first 7 tokens under autoregressive sampling, by
enumerating every prefix (stats.exact_marginals). One goodness-of-fit test per position,
Bonferroni-combined, at ALPHA = 1e-3.

The tests have power: three plausible mistakes, injected below, make them fail at the same sample sizes:
(a) the bonus token drawn from the plain softmax instead of the shaped p;
(b) the verifier handed a q that is not the one the draft sampled from: the raw softmax, or only its
    temperature applied (top-k and top-p forgotten);
(c) after a rejection, the token drawn from p again instead of the residual norm(max(0, p - q)).
Handing the verifier no q (a sampled draft then accepted with probability p(token), as a deterministic
proposal is) is no such mistake: it stays lossless, only slower, and passed on every block like the code.

Every method runs on both of paradec's CPU engines, the tiny model in float32 (paradec.cpu.fast) and its GGUF file at
4 bits (paradec.cpu.quant), the drafts in float32 as a run's are. A test runs one block of seeds (BLOCKS[0]), and
the suite injects one mistake per method (IN_SUITE, every kind once) on the 4-bit engine (the default: the mistakes
live in the verifier and the chain, which both engines share); scripts/seed_blocks.py runs each method, correct and
with each mistake of CAUGHT, on both engines and four disjoint blocks (base seeds 0, 10,000, 20,000, 30,000). On
all eight every correct method passes (with its coverage) and every mistake fails. The p-values, the smallest of
the eight for the correct code, the largest for a mistake:
    method      runs   correct   (a)       (b raw)   (b temp.)  (c)
    sps          600   0.29      1.0e-7    1.5e-23   3.9e-18    1.1e-19
    eagle       1000   0.031     2.1e-6                         1.5e-22
    pld         1000   0.14      1.3e-11                        4.8e-22
    early_exit   400   0.34      1.6e-31   2.1e-7               1.4e-9
    mirror       250   0.061     7.4e-25                        1.2e-5"""
import contextlib
import copy
from pathlib import Path

import pytest
import torch

import paradec.core.engine as engine
import paradec.core.verify as verify
import paradec.drafters.draft_length as draft_length
from paradec.core.sampling import Sampler
from paradec.cpu.fast import FastTarget
from paradec.cpu.quant import QuantModel
from paradec.drafters import eagle_head, early_exit
from paradec.drafters.eagle import Eagle
from paradec.drafters.early_exit import EarlyExit
from paradec.drafters.mirror import Mirror
from paradec.drafters.pld import PromptLookup
from paradec.drafters.sps import SpeculativeSampling
from paradec.models import Loaded

from gguf_files import Logits, write
from helpers import build, tiny_model
from stats import ALPHA, exact_marginals, marginals_pvalue

pytestmark = [pytest.mark.usefixtures("one_thread"), pytest.mark.slow]  # thousands of short runs

V, LENGTH = 12, 7
SAMPLER = Sampler(temperature=0.7, top_k=3, top_p=0.9)
PROMPT = [0, 4, 1, 2, 3, 1, 2, 3, 1, 2]  # repeats: prompt lookup finds n-grams to copy; it opens, as a
# chat template does, on tokens its end lacks (a token in both would read as a turn marker, see pld.begin)
RUNS = {"sps": 600, "eagle": 1000, "pld": 1000, "early_exit": 400, "mirror": 250}  # each catches its mistakes
BLOCKS = (0, 10_000, 20_000, 30_000)  # disjoint seed blocks (no method here runs 10,000 times)


def build_target():
    """Two layers: early exit drafts with the first. Peakier than a random model: top-k and top-p both cut."""
    model = tiny_model(V, seed=0, layers=2, hidden=32)
    with torch.no_grad():
        model.lm_head.weight.mul_(4.0)
    return model


def engine_of(model, weights: str, folder: Path) -> Loaded:
    """The model as paradec runs it on the CPU (paradec.models.Loaded): in float32 its lean forward
    (paradec.cpu.fast), at 4 bits its GGUF file on the 4-bit engine (paradec.cpu.quant). `decoder` is what the
    decode loop runs, `view` what the drafters read of the target."""
    if weights == "f32":
        return Loaded(model, None, "tiny", "cpu", "float32", fast=FastTarget(model))
    return Loaded(QuantModel(write(model, folder / "tiny.gguf")), None, "tiny", "cpu", "float32", weights="q4")


def build_drafters(model, target: Loaded, folder: Path) -> dict:
    """A draft close to the target (its LM head perturbed: accepted often, rejected sometimes), shared by sps
    and mirror; EAGLE's default-initialised head (its guesses pass the target's feature through, often
    accepted); an early-exit adapter at layer 1 that has learnt the target's last layer but for a little
    noise, scoring 9 of the 12 tokens (q is zero on 3 that p draws: only the residual reaches them).
    model: the tiny model they are made from; target: its engine (engine_of). The draft runs on paradec's CPU
    forward in float32, as a run's draft does."""
    draft = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        draft.lm_head.weight.add_(torch.randn(draft.lm_head.weight.shape, generator=gen) * 0.1)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        head = eagle_head.EagleHead(model.config, 1, None)
        adapter = early_exit.Adapter(model.config, 1, torch.arange(9))
    adapter.layer.load_state_dict(model.model.layers[1].state_dict())  # a copy: the shared layer stays as it is
    with torch.no_grad():
        for weight in adapter.layer.parameters():
            weight.add_(torch.randn(weight.shape, generator=gen) * 0.02)
    eagle_head.save(head, folder / "eagle", model.config, {"test": True})
    early_exit.save(adapter, folder / "early_exit", {"test": True})
    heads = {"eagle": str(folder / "eagle"), "early_exit": str(folder / "early_exit")}
    draft, view = FastTarget(draft), target.view
    return {"sps": lambda: build(SpeculativeSampling, draft, k=2, draft_length="fixed"),
            "eagle": lambda: build(Eagle, view, head=heads["eagle"], tree="[[0], [1], [0, 0], [2]]",
                                   draft_length="fixed"),
            "pld": lambda: build(PromptLookup, k=1, ngram_max=2),  # each accepted copy is followed by a bonus
            "early_exit": lambda: build(EarlyExit, view, k=2, exit_layer=1, adapter=heads["early_exit"],
                                        draft_length="fixed"),
            "mirror": lambda: build(Mirror, draft, k=1, bets=2)}


def draw(target: Loaded, make, runs: int, base: int = BLOCKS[0]) -> tuple[list[list[int]], list]:
    """`runs` decodes seeded base, base + 1, ...: each one's tokens, and its steps."""
    samples, steps = [], []
    for seed in range(base, base + runs):
        run = list(engine.decode(target.decoder, make(), PROMPT, LENGTH, SAMPLER, torch.Generator().manual_seed(seed)))
        samples.append([t for s in run for t in s.tokens])
        steps.append(run)
    return samples, steps


def coverage(steps: list) -> dict[str, float]:
    """What the runs went through, per run: the fewest verify passes, and bonus, accepted, resampled tokens."""
    origins = [o for run in steps for s in run for o in s.origins]
    return {"passes": min(len(run) for run in steps),
            **{o: origins.count(o) / len(steps) for o in ("bonus", "accepted", "resampled")}}


def covered(seen: dict[str, float]) -> bool:
    """The runs went through at least 3 verify passes each, and through bonus tokens, accepted drafts and
    rejections. Each floor is about half the fewest a run of any method had on either engine and any of the four
    blocks (bonus tokens: 0.55, accepted: 0.96, resampled: 1.17), 10 standard errors or more away: no block fails
    here."""
    return seen["passes"] >= 3 and seen["bonus"] > 0.3 and seen["accepted"] > 0.5 and seen["resampled"] > 0.5


@pytest.fixture(scope="module")
def model():
    return build_target()


@pytest.fixture(scope="module", params=["f32", "q4"])
def target(request, model, tmp_path_factory):
    return engine_of(model, request.param, tmp_path_factory.mktemp("q4"))


@pytest.fixture(scope="module")
def exact(target):
    return exact_marginals(Logits(target.decoder), PROMPT, SAMPLER, LENGTH)


@pytest.fixture(scope="module")
def drafters(model, target, tmp_path_factory):
    return build_drafters(model, target, tmp_path_factory.mktemp("drafters"))


@pytest.mark.parametrize("method", RUNS)
def test_the_first_tokens_follow_autoregressive_sampling(target, exact, drafters, method):
    samples, steps = draw(target, drafters[method], RUNS[method])
    assert covered(coverage(steps)), coverage(steps)
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
    "c: resampled from p, not the residual": ("residual", lambda real: lambda p, q: p),  # not norm(max(0, p - q))
}
A, B_RAW, B_TEMPERATURE, C = MISTAKES
CAUGHT = {"sps": list(MISTAKES), "eagle": [A, C], "pld": [A, C], "early_exit": [A, B_RAW, C], "mirror": [A, C]}
# The suite injects one mistake per method, each kind at least once; scripts/seed_blocks.py injects every one
# of CAUGHT on four blocks (the table above), which is the evidence of power the suite's runs would repeat.
IN_SUITE = {"sps": B_TEMPERATURE, "eagle": A, "pld": A, "early_exit": B_RAW, "mirror": C}


@contextlib.contextmanager
def injected(mistake: str):
    """The mistake in place while the block runs (the verifier's or the chain's function, not a model)."""
    where, inject = MISTAKES[mistake]
    module = {"accept": engine, "chain": draft_length, "residual": verify}[where]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, where, inject(getattr(module, where)))
        yield


@pytest.mark.parametrize("target", ["q4"], indirect=True)  # the default engine; power is the test's, not the engine's
@pytest.mark.parametrize("method, mistake", IN_SUITE.items())
def test_an_injected_mistake_fails_the_test(target, exact, drafters, method, mistake):
    with injected(mistake):
        samples, _ = draw(target, drafters[method], RUNS[method])
    assert marginals_pvalue(samples, exact) < ALPHA
