"""Greedy decoding: every method gives autoregressive decoding's tokens, token for token.

Tiny random float32 Llamas (and one float64 check), prompts given as token ids, through
paradec.core.engine.decode directly. Drafts: the target itself (always agrees), a copy of the
target whose LM-head rows are rotated by one (its argmax is never the target's), and an
unrelated random model. Also a test-only tree drafter, so that accepted paths that are
not a prefix of the node list (KV compaction's index path) run inside the real loop."""
import copy
import random

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paradec.core import records, tree
from paradec.core.drafter import Drafter
from paradec.core.engine import decode
from paradec.core.sampling import Sampler
from paradec.core.steps import Draft
from paradec.drafters.draft_length import MAX_K, SCHEDULES
from paradec.drafters.pld import PromptLookup
from paradec.drafters.sps import SpeculativeSampling
from paradec.traces.trace import Trace

from helpers import build, tiny_model

GREEDY = Sampler()  # frozen: one instance serves every default

pytestmark = pytest.mark.usefixtures("one_thread")

V = 64
SHARP = 8.0  # LM-head scale: peakier distributions, so drafts are sometimes confident
# Fixed derandomized examples keep the suite deterministic; each example is a few
# short decodes (tens of milliseconds).
FEW = settings(max_examples=25, deadline=None, derandomize=True, database=None,
               suppress_health_check=[HealthCheck.too_slow])


def _sharp(model):
    with torch.no_grad():
        model.lm_head.weight.mul_(SHARP)
    return model


@pytest.fixture(scope="module")
def models():
    target = _sharp(tiny_model(V, seed=0))
    never = copy.deepcopy(target)
    with torch.no_grad():  # row i gets row i+1: the draft's argmax is the target's argmax - 1
        never.lm_head.weight.copy_(torch.roll(target.lm_head.weight, shifts=-1, dims=0))
    return {"target": target, "self": target, "never": never, "other": _sharp(tiny_model(V, seed=1))}


def generate(model, drafter, prompt, n, eos=frozenset(), sampler=GREEDY):
    steps = list(decode(model, drafter, prompt, n, sampler, None, set(eos)))
    return [t for s in steps for t in s.tokens], steps


def trace_of(steps) -> Trace:
    return Trace(method="?", params={}, model="tiny", prompt="", prompt_ids=[], sampling={},
                 max_new_tokens=0, steps=steps)


def ar(models, prompt, n, eos=frozenset()):
    return generate(models["target"], Drafter(), prompt, n, eos)[0]


def check_steps(steps, n, eos=frozenset()):
    """What every run must satisfy, whatever the method."""
    out = [t for s in steps for t in s.tokens]
    assert len(out) == n or (out and out[-1] in eos)
    assert not any(t in eos for t in out[:-1])
    for s in steps:
        assert tree.is_path([nd.parent for nd in s.nodes], s.accepted)
        assert len(s.tokens) == len(s.origins) <= len(s.accepted) + 1
        assert [nd.status == "accepted" for nd in s.nodes] == [i in s.accepted for i in range(len(s.nodes))]
    assert [s.context_len for s in steps] == [steps[0].context_len + sum(len(s.tokens) for s in steps[:i])
                                              for i in range(len(steps))]


prompts = st.lists(st.integers(0, V - 1), min_size=1, max_size=12)


@FEW
@given(prompt=prompts, n=st.integers(1, 40), k=st.integers(1, 7), schedule=st.sampled_from(SCHEDULES),
       threshold=st.sampled_from([0.0, 0.3, 0.6, 1.0]), draft=st.sampled_from(["self", "never", "other"]))
def test_sps_greedy_equals_ar(models, prompt, n, k, schedule, threshold, draft):
    drafter = build(SpeculativeSampling, models[draft], k=k, draft_length=schedule, threshold=threshold)
    out, steps = generate(models["target"], drafter, prompt, n)
    assert out == ar(models, prompt, n)
    check_steps(steps, n)


@st.composite
def repetitive_prompts(draw):
    """A segment repeated (the kind of prompt prompt-lookup decoding is for), maybe cut short."""
    seg = draw(st.lists(st.integers(0, V - 1), min_size=1, max_size=6))
    reps = draw(st.integers(1, 4))
    cut = draw(st.integers(0, len(seg)))
    return seg * reps + seg[:cut]


@FEW
@given(prompt=repetitive_prompts(), n=st.integers(1, 40), k=st.integers(1, 10), lo=st.integers(1, 3),
       extra=st.integers(0, 2))
def test_pld_greedy_equals_ar(models, prompt, n, k, lo, extra):
    out, steps = generate(models["target"], build(PromptLookup, k=k, ngram_min=lo, ngram_max=lo + extra), prompt, n)
    assert out == ar(models, prompt, n)
    check_steps(steps, n)


REPEAT = [3, 14, 15, 9, 2, 6, 3, 14, 15, 9, 2, 6, 3, 14]


@pytest.mark.parametrize("ngram", [(1, 1), (1, 3), (2, 4), (3, 3)])
def test_pld_drafts_and_accepts_on_repetition(models, ngram):
    lo, hi = ngram
    out, steps = generate(models["target"], build(PromptLookup, k=6, ngram_min=lo, ngram_max=hi), REPEAT, 48)
    assert out == ar(models, REPEAT, 48)
    t = trace_of(steps)
    assert t.drafted > 0 and t.accepted_drafts > 0
    assert t.tau > 1.0
    assert all(not s.nodes for s in steps) or any(s.record.ngram for s in steps)


def test_self_draft_is_always_accepted(models):
    k, n = 4, 37
    out, steps = generate(models["target"], build(SpeculativeSampling, models["self"], k=k), REPEAT, n)
    assert out == ar(models, REPEAT, n)
    t = trace_of(steps)
    assert trace_of(steps[:-1]).acceptance == 1.0 == t.acceptance  # the cut nodes were never tested
    assert [len(s.tokens) for s in steps] == [k + 1] * (n // (k + 1)) + [n % (k + 1)] * bool(n % (k + 1))
    assert t.tau == n / len(steps)
    # The budget leaves the last step room for 2 tokens: the target accepts all 4 drafts, but only
    # the 2 that are committed count as accepted; the other 2 were never reached.
    last = steps[-1]
    assert last.accepted == [0, 1] and last.origins == ["accepted", "accepted"]
    assert [nd.status for nd in last.nodes] == ["accepted", "accepted", "unreached", "unreached"]
    assert t.accepted_drafts == len(out) - len(steps) + 1


def test_never_agreeing_draft_is_never_accepted(models):
    n = 30
    out, steps = generate(models["target"], build(SpeculativeSampling, models["never"], k=3), REPEAT, n)
    assert out == ar(models, REPEAT, n)
    t = trace_of(steps)
    assert t.drafted == 3 * n
    assert t.acceptance == 0.0 == t.drafted_accepted and t.accepted_drafts == 0 and t.tested == n
    assert t.tau == 1.0
    assert all(s.origins == ["resampled"] for s in steps)


def test_heuristic_schedule_grows_after_full_acceptance_and_shrinks_after_rejection(models):
    _, steps = generate(models["target"], build(SpeculativeSampling, models["self"], k=2, draft_length="heuristic"),
                        REPEAT, 100)
    ks = [s.record.k for s in steps]
    assert ks[:8] == [2, 4, 6, 8, 10, 12, 14, 16]
    assert set(ks[8:]) == {MAX_K}
    _, steps = generate(models["target"], build(SpeculativeSampling, models["never"], k=5, draft_length="heuristic"),
                        REPEAT, 10)
    assert [s.record.k for s in steps] == [5, 4, 3, 2, 1, 1, 1, 1, 1, 1]
    assert [len(s.nodes) for s in steps] == [5, 4, 3, 2, 1, 1, 1, 1, 1, 1]


def test_confidence_schedule_stops_when_the_draft_is_unsure(models):
    _, steps = generate(models["target"],
                        build(SpeculativeSampling, models["other"], k=6, draft_length="confidence", threshold=1.0),
                        REPEAT, 20)
    assert {len(s.nodes) for s in steps} == {1}  # no distribution reaches max prob 1: one token each
    _, steps = generate(models["target"],
                        build(SpeculativeSampling, models["other"], k=6, draft_length="confidence", threshold=0.0),
                        REPEAT, 20)
    assert {len(s.nodes) for s in steps} == {6}


@pytest.mark.parametrize("method", ["sps-self", "sps-never", "sps-other", "pld"])
def test_eos_stops_every_method_where_ar_stops(models, method):
    full = ar(models, REPEAT, 60)
    for eos_at in (0, 5, 23):  # first occurrences only, so the expected stop is unambiguous
        eos = full[eos_at]
        stop = full.index(eos) + 1
        drafter = build(PromptLookup, k=5) if method == "pld" else build(SpeculativeSampling, models[method[4:]], k=4)
        out, steps = generate(models["target"], drafter, REPEAT, 60, eos={eos, V + 5})
        assert out == full[:stop] == ar(models, REPEAT, 60, eos={eos})
        check_steps(steps, 60, eos={eos})


@FEW
@given(prompt=repetitive_prompts(), n=st.integers(1, 30), eos=st.sets(st.integers(0, V - 1), max_size=3),
       method=st.sampled_from(["pld", "self", "never", "other"]))
def test_eos_random(models, prompt, n, eos, method):
    if method == "pld":
        drafter = build(PromptLookup, k=4, ngram_max=2)
    else:
        drafter = build(SpeculativeSampling, models[method], k=3)
    out, steps = generate(models["target"], drafter, prompt, n, eos)
    assert out == ar(models, prompt, n, eos)
    check_steps(steps, n, eos)


def test_float64(models):
    target = tiny_model(V, seed=0, dtype=torch.float64)
    draft = tiny_model(V, seed=1, dtype=torch.float64)
    ref = generate(target, Drafter(), REPEAT, 40)[0]
    assert generate(target, build(SpeculativeSampling, draft, k=3, draft_length="heuristic"), REPEAT, 40)[0] == ref
    assert generate(target, build(SpeculativeSampling, target, k=5), REPEAT, 40)[0] == ref
    assert generate(target, build(PromptLookup, k=4), REPEAT, 40)[0] == ref


class OracleTree(Drafter):
    """Test-only: a random tree (seeded by the context length) in which one random node's
    root-to-node path spells AR's true continuation, so long paths that skip nodes
    (and siblings tried after a rejected one) are accepted."""

    name = "oracle-tree"

    def __init__(self, reference: list[int], size: int):
        super().__init__()
        self.reference, self.size = reference, size

    def propose(self, ctx, sampler, gen):
        rng = random.Random(len(ctx))
        parents = [rng.randrange(-1, i) for i in range(self.size)]
        tokens = [rng.randrange(V) for _ in range(self.size)]
        for depth, node in enumerate(tree.ancestors(parents, rng.randrange(self.size))):
            if len(ctx) + depth < len(self.reference):
                tokens[node] = self.reference[len(ctx) + depth]
        return Draft(tokens=tokens, parents=parents)


@pytest.mark.parametrize("size", [1, 3, 8, 20])
def test_tree_drafts_greedy_equal_ar(models, size):
    n = 40
    ref = REPEAT + ar(models, REPEAT, n + 25)
    out, steps = generate(models["target"], OracleTree(ref, size), REPEAT, n)
    assert out == ref[len(REPEAT) : len(REPEAT) + n]
    check_steps(steps, n)
    assert trace_of(steps).tau > 1.0
    if size >= 8:  # an accepted path that is not nodes 0, 1, 2, ...: the KV cache is gathered, not cropped
        assert any(s.accepted != list(range(len(s.accepted))) for s in steps)


def test_interleaved_runs_share_a_model_but_not_a_cache(models):
    """Runs keep their own KV caches: advancing two runs in turn on the same models
    gives what each gives alone (and the shared models are left unchanged)."""
    before = {k: v.clone() for k, v in models["target"].state_dict().items()}
    p1, p2 = REPEAT, [7, 1, 7, 1, 7]
    make1 = lambda: build(SpeculativeSampling, models["self"], k=3)
    make2 = lambda: build(SpeculativeSampling, models["other"], k=2, draft_length="heuristic")
    alone1, alone2 = generate(models["target"], make1(), p1, 30)[0], generate(models["target"], make2(), p2, 30)[0]
    g1 = decode(models["target"], make1(), p1, 30, Sampler())
    g2 = decode(models["target"], make2(), p2, 30, Sampler())
    got1, got2 = [], []
    for s1, s2 in zip(g1, g2):
        got1 += s1.tokens
        got2 += s2.tokens
    got1 += [t for s in g1 for t in s.tokens]
    got2 += [t for s in g2 for t in s.tokens]
    assert (got1, got2) == (alone1, alone2)
    after = models["target"].state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_sps_drafts_the_draft_models_own_greedy_continuation(models):
    """Whatever was accepted or rejected before, each proposal is what the draft model
    alone would say next: its KV cache is kept in step with the committed tokens."""
    for draft, schedule in (("other", "heuristic"), ("self", "fixed"), ("never", "heuristic")):
        drafter = build(SpeculativeSampling, models[draft], k=3, draft_length=schedule)
        seen, propose = [], drafter.propose

        def spy(ctx, sampler, gen, propose=propose, seen=seen):  # this iteration's drafter
            d = propose(ctx, sampler, gen)
            seen.append((list(ctx), d.tokens))
            return d

        drafter.propose = spy
        generate(models["target"], drafter, REPEAT, 40)
        assert len(seen) > 3
        for ctx, tokens in seen:
            assert tokens == generate(models[draft], Drafter(), ctx, len(tokens))[0]


def _pld(ctx, **params):
    return build(PromptLookup, **params).propose(ctx, Sampler(), None)


def test_pld_copies_what_followed_the_latest_match_of_the_longest_ngram():
    ctx = [7, 1, 2, 3, 9, 9, 2, 3, 4, 4, 1, 2, 3]
    d = _pld(ctx, k=3, ngram_max=3)  # the trigram 1 2 3 occurs at 1: what followed it
    assert d.tokens == [9, 9, 2] and d.parents == [-1, 0, 1]
    assert d.record == records.Pld(ngram=[1, 2, 3], match_at=1)
    assert not d.q or all(q is None for q in d.q)  # deterministic: acceptance uses a one-hot q
    d = _pld(ctx, k=3, ngram_max=2)  # bigram 2 3: latest earlier occurrence at 6, not 2
    assert d.tokens == [4, 4, 1] and d.record.match_at == 6
    assert _pld(ctx, k=2, ngram_max=2).tokens == [4, 4]
    assert _pld(ctx, k=50, ngram_max=2).tokens == [4, 4, 1, 2, 3]  # up to the end of the context
    assert _pld([3, 5, 5], k=4).tokens == [5]  # a run: the match just before the last token counts


def test_pld_without_a_match_drafts_nothing():
    assert _pld([1, 2, 3]).tokens == []
    assert _pld([5]).tokens == []
    assert _pld([4, 8, 1, 4], ngram_min=1).tokens == [8, 1, 4]
    assert _pld([4, 8, 1, 4], ngram_min=2, ngram_max=3).tokens == []


@pytest.mark.parametrize("params", [{"k": 0}, {"k": -2}, {"ngram_min": 0}, {"ngram_min": 3, "ngram_max": 2}])
def test_pld_refuses_bad_parameters(params):
    with pytest.raises(ValueError):
        build(PromptLookup, **params)


def test_prompt_lookup_never_drafts_the_chat_template():
    """ChatML-like ids: 1 = <|im_start|>, 8 = system, 7 = newline, 2 = <|im_end|>, 9 = assistant. The last
    newline's latest match runs into <|im_start|>assistant: the drafter takes an earlier one instead."""
    prompt = [1, 8, 7, 5, 6, 2, 7, 1, 9, 7]
    drafter = build(PromptLookup, k=4, ngram_max=2)
    drafter.begin(prompt)
    draft = drafter.propose(prompt, None, None)
    assert draft.tokens == [5, 6, 2, 7] and draft.record.match_at == 2
