"""Batched decoding (paradec.core.engine.decode_many): B sequences of different lengths share each target forward.

- The fast CPU forward's forward_many gives each sequence the bits its own forward() gives it (chains, trees,
  a window, a prefill beside decode steps, caches of different lengths).
- Every lossless method, at B = 2, 3 and 5 on prompts of different lengths, gives each sequence its batch-1
  tokens and steps (greedy, float32), and its batch-1 draws when sampling (each sequence has its own generator).
- A sequence that ends early (its end-of-sequence token, a smaller budget) leaves the batch; the rest go on.
- Sampling at B = 2 keeps the target's distribution: a chi-square test against the exact marginals of each
  prompt, with power (an injected mistake, and sequences handed each other's logits, fail it).
- The embedded model with its shipped drafters (slow): run.decode_batch's traces are each prompt's alone."""
import pytest
import torch

import paradec.core.engine as engine
from paradec import catalog, methods
from paradec.core import verify
from paradec.core.drafter import Drafter
from paradec.core.engine import Clock, decode, decode_many
from paradec.core.sampling import Sampler
from paradec.core.steps import Draft
from paradec.cpu import kernels
from paradec.cpu.fast import FastTarget
from paradec.drafters import eagle_head, medusa_heads

from helpers import cannot_run, tiny_model

# make test only: every method decoded in batches and alone
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

V, H = 96, 64
LOSSLESS = [m for m, d in catalog.METHODS.items() if d.lossless.startswith("yes")]
# Different lengths, some repetitive (prompt lookup and Lookahead find n-grams), one of a single token.
PROMPTS = [[5, 9, 11, 5, 9, 11, 5, 9, 11, 20], [7, 3], [(7 * i + 3) % V for i in range(17)], [42],
           [1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3]]
N = 16
GREEDY = Sampler()  # frozen: one instance serves every default


@pytest.fixture(scope="module")
def model():
    m = tiny_model(V, seed=3, layers=3, hidden=H)
    with torch.no_grad():
        m.lm_head.weight.mul_(8.0)  # peakier: drafts are sometimes accepted
    return m


@pytest.fixture(scope="module")
def fast(model):
    if kernels.kernel() is None:  # torch's products may sum a row differently beside other rows
        cannot_run(f"no C++ kernel here: {kernels.why_not()}")
    return FastTarget(model)


@pytest.fixture(scope="module")
def make(model, tmp_path_factory):
    """method -> a new drafter for it, built as a run builds it (the heads written once, untrained)."""
    folder = tmp_path_factory.mktemp("heads")
    medusa_heads.save(medusa_heads.MedusaHeads(H, 4, 1, 0, None), folder / medusa_heads.OURS)
    for version in (1, 3):
        head = eagle_head.EagleHead(model.config, version, torch.arange(V) if version == 3 else None)
        eagle_head.save(head, folder / f"eagle{version}", model.config, {"test": True})
    given = {"ar": {}, "sps": {"k": 3}, "pld": {"k": 4}, "jacobi": {"block": 4},
             "lookahead": {"window": 3, "ngram": 3, "candidates": 3}, "medusa": {"heads": str(folder), "tree": ""},
             "eagle": {"head": str(folder / "eagle1"), "tree": "cpu10"}, "eagle2": {"head": str(folder / "eagle1")},
             "eagle3": {"head": str(folder / "eagle3")}, "early_exit": {"k": 3, "exit_layer": 1, "adapter": "none"},
             "mirror": {"k": 3, "bets": 2}}
    draft = tiny_model(V, seed=4, layers=1, hidden=H)

    def build(method):
        params = methods.resolve(method, methods.parse_params(method, given[method]))
        return methods.make_drafter(method, params, draft, model)
    return build


def alone(target, drafter, prompt, n=N, sampler=GREEDY, seed=0, eos=frozenset()):
    gen = torch.Generator().manual_seed(seed)  # as a run's: Lookahead's first guesses draw from it
    return list(decode(target, drafter, prompt, n, sampler, gen, set(eos)))


def batched(target, drafters, prompts, n=N, sampler=GREEDY, seed=0, eos=frozenset(), clock=None):
    """Each sequence's steps (each with its own generator, seeded alike), and the order the loop yielded them in."""
    seqs = [(d, p, torch.Generator().manual_seed(seed)) for d, p in zip(drafters, prompts)]
    steps, order = [[] for _ in prompts], []
    for i, step in decode_many(target, seqs, n, sampler, set(eos), clock):
        steps[i].append(step)
        order.append(i)
    return steps, order


def tokens(steps):
    return [t for s in steps for t in s.tokens]


# ---------------------------------------------------------------- one forward for several sequences

DRAFTS = [Draft(tokens=[5, 6, 7], parents=[-1, 0, 1]),
          Draft(tokens=[5, 9, 6, 11, 12], parents=[-1, -1, 0, 0, 1]),
          Draft(tokens=[5, 6], parents=[-1, 0], window=[3, 4, 8], window_pos=[1, 2, 3],
                window_sees=[[0, 3], [0, 3, 4], [0, 3, 4, 5]]),
          Draft()]


@pytest.mark.parametrize("layers", [(), (0, 2, -1)])
def test_forward_many_gives_each_sequence_the_bits_of_its_own_forward(fast, layers):
    """Caches of 9, 2 and 17 entries and one empty (its prefill rides along), a chain, a tree, a window and
    a plain step, in one pass: each sequence's logits, hidden states and cache equal those of forward() alone."""
    prompts = [PROMPTS[0][:-1], PROMPTS[1][:-1] + [8, 8], PROMPTS[2]]
    pairs = [(fast.new_cache(), fast.new_cache()) for _ in range(4)]
    for (a, b), prompt in zip(pairs, prompts):
        for cache in (a, b):
            verify.target_forward(fast, cache, prompt, Draft())
    uncached = [[20], [3], [4], PROMPTS[4]]
    want = [verify.target_forward(fast, a, u, d, layers) for (a, _), u, d in zip(pairs, uncached, DRAFTS)]
    got = verify.target_forward_many(fast, [(b, u, d) for (_, b), u, d in zip(pairs, uncached, DRAFTS)], layers)
    for w, g, (a, b) in zip(want, got, pairs):
        assert torch.equal(w.logits, g.logits)
        for field in ("hidden", "prefix_hidden"):
            x, y = getattr(w, field), getattr(g, field)
            assert (x is None and y is None) or torch.equal(x, y), field
        n = a.get_seq_length()
        assert n == b.get_seq_length() and torch.equal(a.k[..., :n, :], b.k[..., :n, :])
        assert torch.equal(a.v[..., :n, :], b.v[..., :n, :])


def test_torchs_fallback_runs_the_same_pass(model):
    """Without the kernel the same wiring runs on torch's operations: equal to float32 rounding."""
    slow = FastTarget(model, use_kernel=False)
    pairs = [(slow.new_cache(), slow.new_cache()) for _ in range(3)]
    for (a, b), prompt in zip(pairs, PROMPTS):
        for cache in (a, b):
            verify.target_forward(slow, cache, prompt, Draft())
    want = [verify.target_forward(slow, a, [3], d, (-1,)) for (a, _), d in zip(pairs, DRAFTS)]
    got = verify.target_forward_many(slow, [(b, [3], d) for (_, b), d in zip(pairs, DRAFTS)], (-1,))
    for w, g in zip(want, got):
        torch.testing.assert_close(g.logits, w.logits, atol=2e-5, rtol=0)
        torch.testing.assert_close(g.hidden, w.hidden, atol=2e-5, rtol=0)


# ---------------------------------------------------------------- batch-1 equality, every lossless method

@pytest.mark.parametrize("method", LOSSLESS)
def test_every_lossless_method_gives_each_sequence_its_batch_1_tokens(fast, make, method):
    ref = [alone(fast, make(method), p) for p in PROMPTS]
    for b in (2, 3, 5):
        for first in range(0, len(PROMPTS), b):  # every prompt in a batch of b, some twice (the last batch wraps)
            idx = [(first + j) % len(PROMPTS) for j in range(b)]
            steps, _ = batched(fast, [make(method) for _ in idx], [PROMPTS[i] for i in idx])
            for i, got in zip(idx, steps):
                assert tokens(got) == tokens(ref[i]), (method, b, i)
                assert [s.accepted for s in got] == [s.accepted for s in ref[i]], (method, b, i)
                assert [len(s.nodes) for s in got] == [len(s.nodes) for s in ref[i]]


@pytest.mark.parametrize("method", ["ar", "sps", "eagle2", "lookahead"])
def test_a_hugging_face_target_runs_a_batch_one_forward_each(model, make, method):
    ref = [tokens(alone(model, make(method), p)) for p in PROMPTS[:3]]
    steps, _ = batched(model, [make(method) for _ in range(3)], PROMPTS[:3])
    assert [tokens(s) for s in steps] == ref


@pytest.mark.parametrize("method", ["sps", "eagle", "pld", "early_exit", "mirror"])
def test_sampling_in_a_batch_draws_what_each_sequence_draws_alone(fast, make, method):
    sampler, greedy = Sampler(temperature=0.8, top_k=20, top_p=0.95), tokens(alone(fast, make(method), PROMPTS[0]))
    firsts = []
    for seed in range(3):
        ref = [tokens(alone(fast, make(method), p, sampler=sampler, seed=seed)) for p in PROMPTS[:3]]
        steps, _ = batched(fast, [make(method) for _ in range(3)], PROMPTS[:3], sampler=sampler, seed=seed)
        assert [tokens(s) for s in steps] == ref
        firsts.append(ref[0])
    assert any(f != greedy for f in firsts)  # really sampled


# ---------------------------------------------------------------- sequences that leave the batch

def test_a_sequence_that_meets_its_end_of_sequence_token_leaves_while_the_others_go_on(fast, make):
    prompts = PROMPTS[:3]
    full = [tokens(alone(fast, make("eagle2"), p, n=30)) for p in prompts]
    eos = next(t for t in full[1][2:8] if t not in full[0] + full[2])  # ends sequence 1 early, no other
    steps, order = batched(fast, [make("eagle2") for _ in prompts], prompts, n=30, eos={eos})
    assert tokens(steps[1]) == full[1][:full[1].index(eos) + 1] == tokens(alone(fast, make("eagle2"), prompts[1],
                                                                                n=30, eos={eos}))
    assert [tokens(s) for s in (steps[0], steps[2])] == [full[0], full[2]]
    last = len(order) - 1 - order[::-1].index(1)
    assert 1 not in order[last + 1:] and {0, 2} <= set(order[last + 1:])  # it left; the others went on


def test_a_smaller_budget_ends_a_sequence_first(fast, make):
    seqs = [(make("pld"), p, None) for p in PROMPTS[:3]]
    clock = Clock()
    got = [[], [], []]
    for i, step in decode_many(fast, seqs, [3, 20, 9], Sampler(), clock=clock):
        got[i].append(step)
    assert [len(tokens(s)) for s in got] == [3, 20, 9]
    assert [tokens(s) for s in got] == [tokens(alone(fast, make("pld"), p, n)) for p, n in zip(PROMPTS, [3, 20, 9])]
    assert clock.finished_ms[0] < clock.finished_ms[2] < clock.finished_ms[1] == pytest.approx(clock.ms)


def test_steps_keep_their_timings_and_one_clock_times_the_batch(fast, make):
    clock = Clock()
    steps, order = batched(fast, [make("sps") for _ in range(3)], PROMPTS[:3], clock=clock)
    assert order[:3] == [0, 1, 2]  # a forward's steps in sequence order
    for run in steps:
        assert all(s.draft_ms > 0 and s.verify_ms > 0 for s in run)
        assert [s.index for s in run] == list(range(len(run)))
        assert all(a.start_ms < b.start_ms for a, b in zip(run, run[1:]))
    own = sum(s.draft_ms + s.verify_ms for run in steps for s in run)
    assert max(clock.finished_ms.values()) == pytest.approx(clock.ms)
    assert clock.ms < own  # the shared forwards count once
    one = Clock()
    single, _ = batched(fast, [make("sps")], PROMPTS[:1], clock=one)
    assert one.finished_ms[0] == pytest.approx(sum(s.draft_ms + s.verify_ms for s in single[0]))


class Counted(Drafter):
    began = ended = 0

    def begin(self, prompt_ids):
        Counted.began += 1

    def end(self):
        Counted.ended += 1


def test_a_reader_that_stops_early_ends_every_drafter(fast):
    Counted.began = Counted.ended = 0
    loop = decode_many(fast, [(Counted(), p, None) for p in PROMPTS[:3]], N, Sampler())
    next(loop)
    next(loop)
    loop.close()
    assert Counted.began == Counted.ended == 3
    one = decode(fast, Counted(), PROMPTS[0], N, Sampler())
    next(one)
    one.close()
    assert Counted.began == Counted.ended == 4


def test_one_batch_runs_one_method(fast, make):
    with pytest.raises(AssertionError, match="hidden layers"):
        list(decode_many(fast, [(make("medusa"), PROMPTS[0], None), (make("eagle3"), PROMPTS[1], None)], 2, Sampler()))


# ---------------------------------------------------------------- sampling keeps the target's distribution


SAMPLED_RUNS = 600
OTHER = [6, 10, 8, 5, 11, 7]  # the second prompt: another length, another distribution


@pytest.fixture(scope="module")
def sampled(tmp_path_factory):
    """test_sampling_e2e's target on paradec's float32 CPU forward (both sequences' passes in one, as a batched run
    verifies them) and its sps drafter, the two prompts and their exact marginals."""
    from test_sampling_e2e import LENGTH, PROMPT, SAMPLER, build_drafters, build_target, engine_of

    from gguf_files import Logits
    from stats import exact_marginals

    model, folder = build_target(), tmp_path_factory.mktemp("drafters")
    target = engine_of(model, "f32", folder)
    make = build_drafters(model, target, folder)["sps"]
    prompts = [PROMPT, OTHER]
    return target.decoder, make, prompts, [exact_marginals(Logits(target.decoder), p, SAMPLER, LENGTH) for p in prompts]


def draw_batches(target, make, prompts, runs: int = SAMPLED_RUNS):
    """`runs` batches of the two prompts, seeded 0, 1, ...: each sequence's tokens, and its steps."""
    from test_sampling_e2e import LENGTH, SAMPLER

    samples, steps = [[], []], [[], []]
    for seed in range(runs):
        seqs = [(make(), p, torch.Generator().manual_seed(seed)) for p in prompts]
        runs = [[], []]
        for i, step in decode_many(target, seqs, LENGTH, SAMPLER):
            runs[i].append(step)
        for i, run in enumerate(runs):
            samples[i].append(tokens(run))
            steps[i].append(run)
    return samples, steps


def both_pvalue(samples, exact) -> float:
    """Each prompt's marginals test (tests/stats.py), the two Bonferroni-combined."""
    from stats import marginals_pvalue

    return min(1.0, 2 * min(marginals_pvalue(s, e) for s, e in zip(samples, exact)))


@pytest.mark.slow
def test_sampling_at_batch_2_follows_autoregressive_sampling(sampled):
    """At B = 2 (sps: a chain drafted by a model close to the target, with rejections and bonus tokens), each
    prompt's first 7 tokens over 600 batches follow the exact marginals of autoregressive sampling from it."""
    from test_sampling_e2e import coverage, covered

    from stats import ALPHA

    target, make, prompts, exact = sampled
    samples, steps = draw_batches(target, make, prompts)
    assert all(covered(coverage(s)) for s in steps), [coverage(s) for s in steps]
    assert exact[0] != exact[1]
    assert both_pvalue(samples, exact) > ALPHA


@pytest.mark.slow
@pytest.mark.parametrize("mistake", ["bonus from the plain softmax", "the sequences' verify passes swapped"])
def test_an_injected_mistake_fails_the_batch_sampling_test(sampled, mistake):
    """The test has power: the same batches fail it with test_sampling_e2e's mistake (a), and when each
    sequence is handed the other's verify pass."""
    from test_sampling_e2e import A, injected

    from stats import ALPHA

    target, make, prompts, exact = sampled
    if mistake.startswith("bonus"):
        with injected(A):
            samples, _ = draw_batches(target, make, prompts)
    else:
        real = engine.target_forward_many
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(engine, "target_forward_many", lambda *a: real(*a)[::-1])
            samples, _ = draw_batches(target, make, prompts, SAMPLED_RUNS // 4)  # blatant: a quarter shows it
    assert both_pvalue(samples, exact) < ALPHA


# ---------------------------------------------------------------- the embedded model, its trained drafters

EMBEDDED_PROMPTS = ["Explain in detail how a bicycle works.", "Hi!",
                    "Rename the variable x to count in this code and show the whole result:\n"
                    "def tally(items):\n    x = 0\n    for item in items:\n        if item:\n            x += 1\n"
                    "    return x\n"]


@pytest.mark.slow
@pytest.mark.parametrize("method", ["ar", "sps", "medusa", "eagle3"])
def test_the_embedded_model_decodes_a_batch_as_each_prompt_alone(embedded_q4, method):
    """run.decode_batch on SmolLM2 with the shipped drafters, three prompts of 6 to 60 tokens through the chat
    template: each trace is the one its prompt gets alone, and each trace's wall_s is its finish on the batch's
    clock (the batch's time is the largest)."""
    from paradec import models
    from paradec.run import decode_batch
    from paradec.runner import Request, Runner

    runner = Runner("cpu", "float32", loaded={models.EMBEDDED: embedded_q4})
    requests = [Request(method, p, max_new_tokens=24) for p in EMBEDDED_PROMPTS]
    p = runner.prepare(requests[0])
    alone = [runner.decode(r, prepared=p) for r in requests]
    batch = decode_batch(p.target, method, EMBEDDED_PROMPTS, p.params, draft=p.draft, **requests[0].sampling())
    assert [t.token_ids for t in batch] == [t.token_ids for t in alone]
    assert [t.text for t in batch] == [t.text for t in alone] and [t.prompt for t in batch] == EMBEDDED_PROMPTS
    assert [[s.accepted for s in t.steps] for t in batch] == [[s.accepted for s in t.steps] for t in alone]
    assert all(0 < t.wall_s <= max(b.wall_s for b in batch) for t in batch)
    assert method == "ar" or sum(t.accepted_drafts for t in batch) > 0
