"""Invariants by fuzzing: hypothesis drives every method of the registry (paradec.methods)
on a tiny random target with random prompts, lengths, end-of-sequence tokens and
parameters, and checks what every greedy run must satisfy whatever the method:

- the tokens are exactly autoregressive decoding's;
- tau >= 1, one target forward per step, drafted/accepted counts agree with the trace;
- every accepted path is a root-first path of that step's draft tree;
- a step commits its accepted drafts plus one token, except the last, clipped at the
  token budget or an end-of-sequence token;
- the trace round-trips through JSON unchanged.

Medusa and EAGLE use tiny random heads saved to disk (loaded as a user's would be); sps
drafts with self:1, the target's first layer. Bounded: few derandomized examples per
method, a tiny model on one thread; the whole file takes well under a minute."""
import functools
import json

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paradec import catalog, methods
from paradec.catalog import METHODS
from paradec.core import tree
from paradec.core.engine import decode
from paradec.core.sampling import Sampler
from paradec.drafters import eagle_head, medusa_heads
from paradec.drafters.draft_length import SCHEDULES
from paradec.models import Loaded, truncated
from paradec.traces.trace import Trace

from helpers import tiny_model

# make test only: hypothesis draws hundreds of runs
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

V, H, MAX_N = 64, 64, 24
FEW = settings(max_examples=25, deadline=None, derandomize=True, database=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """The target (peaky LM head, so random drafts are sometimes right), its self:1 draft,
    and random Medusa (4 heads) and EAGLE-1/-3 heads saved as folders."""
    target = tiny_model(V, seed=0, hidden=H)
    with torch.no_grad():
        target.lm_head.weight.mul_(8.0)
    loaded = Loaded(target, None, "tiny", "cpu", "float32")
    folder = tmp_path_factory.mktemp("heads")
    gen = torch.Generator().manual_seed(0)
    medusa = medusa_heads.MedusaHeads(H, 4)
    eagle1 = eagle_head.EagleHead(target.config, 1)
    eagle3 = eagle_head.EagleHead(target.config, 3, torch.arange(V))
    with torch.no_grad():
        for module in (medusa, eagle1, eagle3):
            for p in module.parameters():
                p.copy_(torch.randn(p.shape, generator=gen) * 0.2)
    (folder / "medusa").mkdir()
    medusa_heads.save(medusa, folder / "medusa" / medusa_heads.OURS)
    eagle_head.save(eagle1, folder / "eagle1", target.config, {})
    eagle_head.save(eagle3, folder / "eagle3", target.config, {})
    heads = {"medusa": str(folder / "medusa"), "eagle": str(folder / "eagle1"),
             "eagle2": str(folder / "eagle1"), "eagle3": str(folder / "eagle3")}
    return {"target": target, "draft": truncated(loaded, 1).model, "heads": heads}


@functools.lru_cache(maxsize=None)
def _ar_full(target, prompt: tuple) -> list[int]:
    steps = decode(target, methods.make_drafter("ar", {}), list(prompt), MAX_N, Sampler())
    return [t for s in steps for t in s.tokens]


def ar_reference(target, prompt, n, eos) -> list[int]:
    """AR's tokens for n new tokens, stopped after the first end-of-sequence token."""
    out = _ar_full(target, tuple(prompt))[:n]
    stop = next((i + 1 for i, t in enumerate(out) if t in eos), len(out))
    return out[:stop]


def check_run(setup, method, params, prompt, n, eos):
    """Decode greedily with this method and assert every invariant of the module docstring."""
    target = setup["target"]
    drafter = methods.make_drafter(method, methods.parse_params(method, params), setup["draft"], target)
    gen = torch.Generator().manual_seed(0)  # Jacobi's random init draws from the run's generator
    steps = list(decode(target, drafter, prompt, n, Sampler(), gen, set(eos)))
    out = [t for s in steps for t in s.tokens]
    assert out == ar_reference(target, prompt, n, eos)
    for i, s in enumerate(steps):
        parents = [nd.parent for nd in s.nodes]
        assert tree.is_path(parents, s.accepted)
        tree.depths(parents)  # parents come before their children
        assert [nd.status == "accepted" for nd in s.nodes] == [j in s.accepted for j in range(len(s.nodes))]
        assert len(s.tokens) == len(s.origins) >= 1
        if i < len(steps) - 1:
            assert len(s.tokens) == len(s.accepted) + 1
        else:  # clipped at the budget or an end-of-sequence token
            assert len(s.tokens) <= len(s.accepted) + 1
        assert s.target_forwards == 1 and s.verified >= 1 + len(s.nodes)
    trace = Trace(method=method, params=drafter.params, model="tiny", prompt="", prompt_ids=list(prompt),
                  sampling={"temperature": 0.0}, max_new_tokens=n, steps=steps)
    assert trace.tau >= 1.0 and trace.target_forwards == len(steps)
    assert trace.new_tokens == len(out) and trace.drafted == sum(len(s.nodes) for s in steps)
    assert (trace.acceptance is None) == (trace.drafted == 0)
    assert 0.0 <= (trace.drafted_accepted or 0.0) <= (trace.acceptance or 0.0) <= 1.0
    again = Trace.from_json(json.dumps(json.loads(trace.to_json())))
    assert again == trace


prompts = st.lists(st.integers(0, V - 1), min_size=1, max_size=12)
lengths = st.integers(1, MAX_N)
eos_sets = st.sets(st.integers(0, V - 1), max_size=2)
# Rank paths as Medusa's medusa_choices and EAGLE-1's static trees take them.
rank_paths = st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=4), min_size=1, max_size=12)
# Every drafter with a draft distribution takes a draft-length rule.
rules = st.fixed_dictionaries({"draft_length": st.sampled_from(SCHEDULES),
                               "threshold": st.sampled_from([0.0, 0.3, 0.7, 1.0])})
PARAMS = {
    "ar": st.just({}),
    "sps": st.builds(lambda k, r: {"k": k, **r}, st.integers(1, 8), rules),
    "pld": st.integers(1, 3).flatmap(lambda lo: st.fixed_dictionaries(
        {"k": st.integers(1, 10), "ngram_min": st.just(lo), "ngram_max": st.integers(lo, lo + 2)})),
    "jacobi": st.fixed_dictionaries({"block": st.integers(1, 12),
                                     "init": st.sampled_from(METHODS["jacobi"].param("init").choices)}),
    "lookahead": st.fixed_dictionaries({"window": st.integers(1, 6), "ngram": st.integers(2, 4),
                                        "candidates": st.integers(0, 4)}),
    "medusa": st.builds(lambda p, r: {"tree": json.dumps(p), **r}, rank_paths, rules),
    "eagle": st.builds(lambda p, r: {"tree": json.dumps(p), **r}, rank_paths, rules),
    "eagle2": st.builds(lambda d, k, n, r: {"depth": d, "top_k": k, "total_tokens": n, **r},
                        st.integers(1, 5), st.integers(1, 5), st.integers(1, 30), rules),
}
PARAMS["eagle3"] = PARAMS["eagle2"]
# cllm's drafter is Jacobi's; decoded here on the tiny target itself (its fine-tuned copy: tests/test_cllm.py).
PARAMS["cllm"] = PARAMS["jacobi"]
# The tiny target has 2 layers: exit after the first, without an adapter (the trained one is tested in
# tests/test_early_exit.py).
PARAMS["early_exit"] = st.builds(lambda k, r: {"k": k, "exit_layer": 1, "adapter": "none", **r},
                                 st.integers(1, 8), rules)

PARAMS["mirror"] = st.fixed_dictionaries({"k": st.integers(1, 6), "bets": st.integers(1, 8), "parallel": st.booleans()})


def test_every_method_is_fuzzed():
    assert set(PARAMS) == set(catalog.METHODS)


@pytest.mark.parametrize("method", list(PARAMS))
def test_greedy_runs_keep_the_invariants(setup, method):
    @FEW
    @given(prompt=prompts, n=lengths, eos=eos_sets, params=PARAMS[method])
    def fuzz(prompt, n, eos, params):
        if method in setup["heads"]:
            params = {**params, "head" if method.startswith("eagle") else "heads": setup["heads"][method]}
        check_run(setup, method, params, prompt, n, eos)

    fuzz()
