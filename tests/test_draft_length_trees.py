"""Adaptive draft length beyond sps: early_exit's chain, EAGLE-1's cut static tree, EAGLE-2/3's
depth-by-depth growth and Medusa's kept depths. Every rule keeps greedy equal to AR; fixed drafts
what the method always drafted; confidence at threshold 1 drafts one depth; the heuristic's depth
moves +2/-1; the learned rule on the embedded model with the shipped EAGLE-3 head. Tiny random
models, one thread."""
import pytest
import torch

from paradec.core.drafter import Drafter
from paradec.core.engine import decode
from paradec.core.sampling import Sampler
from paradec.drafters import draft_length as dl
from paradec.drafters import eagle_head, medusa_heads
from paradec.drafters.eagle import TREES, Eagle, Eagle2, Eagle3
from paradec.drafters.early_exit import EarlyExit
from paradec.drafters.medusa import Medusa

from helpers import APP, build, tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")

V, H = 64, 64
PROMPT = [3, 14, 15, 9, 2, 6, 3, 14]
MEDUSA_TREE = "[[0, 0, 0, 0], [1, 0, 0], [0, 1], [2]]"


@pytest.fixture(scope="module")
def target():
    model = tiny_model(V, seed=0, hidden=H, layers=4)
    with torch.no_grad():
        model.lm_head.weight.mul_(8.0)  # peaky q and p: drafts are sometimes confident, sometimes right
    return model


def randomized(module, seed, scale):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * scale)
    return module


@pytest.fixture(scope="module")
def folders(target, tmp_path_factory):
    """Random EAGLE-1 and EAGLE-3 heads and Medusa heads, saved where the drafters load them."""
    root = tmp_path_factory.mktemp("heads")
    for version in (1, 3):
        head = eagle_head.EagleHead(target.config, version, torch.arange(V) if version == 3 else None)
        eagle_head.save(randomized(head, version, 0.2), root / f"eagle{version}", target.config, {"test": True})
    (root / "medusa").mkdir()
    medusa_heads.save(randomized(medusa_heads.MedusaHeads(H, 4, 1, 0, None), 0, 0.3),
                      root / "medusa" / medusa_heads.OURS)
    return root


DRAFTERS = {  # name -> (class, parameters, the most depths or tokens a fixed step drafts); no copied branch
    "early_exit": (EarlyExit, {"k": 5, "exit_layer": 2, "adapter": "none"}, 5),
    "eagle": (Eagle, {"head": "eagle1", "tree": "cpu10"}, 5),
    "eagle2": (Eagle2, {"head": "eagle1", "depth": 5, "top_k": 3, "total_tokens": 10}, 5),
    "eagle3": (Eagle3, {"head": "eagle3", "depth": 4, "top_k": 4, "total_tokens": 12, "lookup": 0}, 4),  # tree alone
    "medusa": (Medusa, {"heads": "medusa", "tree": MEDUSA_TREE}, 4),
}


def make(target, folders, name, **rule):
    cls, params, _ = DRAFTERS[name]
    params = {k: str(folders / v) if k in ("head", "heads") else v for k, v in params.items()}
    return build(cls, target, **params, **rule)


def generate(model, drafter, n=30):
    steps = list(decode(model, drafter, PROMPT, n, Sampler()))
    return [t for s in steps for t in s.tokens], steps


def drafting(steps):
    return [s for s in steps if s.nodes]


def depth(step) -> int:
    return max(n.depth for n in step.nodes)


@pytest.fixture(scope="module")
def ar(target):
    return generate(target, Drafter())[0]


@pytest.mark.parametrize("name", DRAFTERS)
@pytest.mark.parametrize("rule", dl.SCHEDULES)
def test_every_rule_keeps_greedy_equal_to_ar_and_records_its_depths(target, folders, ar, name, rule):
    tokens, steps = generate(target, make(target, folders, name, draft_length=rule, threshold=0.5))
    assert tokens == ar
    for s in drafting(steps):
        assert s.record.draft_length >= depth(s)  # a tree's rerank may keep fewer depths than it grew
        assert (s.record.chance is not None) == (rule in ("confidence", "learned"))
        if s.record.chance is not None:  # asked along one path: a chance per depth of it, at most
            assert 1 <= len(s.record.chance) <= s.record.draft_length
            assert all(0.0 <= c <= 1.0 for c in s.record.chance)


@pytest.mark.parametrize("name", DRAFTERS)
def test_fixed_drafts_what_the_method_always_drafted(target, folders, name):
    default = generate(target, make(target, folders, name))[1]
    fixed = generate(target, make(target, folders, name, draft_length="fixed", threshold=0.9))[1]
    assert [[n.token for n in s.nodes] for s in default] == [[n.token for n in s.nodes] for s in fixed]
    most = DRAFTERS[name][2]
    for s in drafting(fixed):
        assert s.record.draft_length == most and s.record.chance is None
        if name in ("eagle", "medusa"):  # static trees: every node, every step
            assert depth(s) == most and len(s.nodes) == {"eagle": len(TREES["cpu10"]), "medusa": 9}[name]


@pytest.mark.parametrize("name", DRAFTERS)
def test_confidence_one_drafts_one_depth(target, folders, ar, name):
    tokens, steps = generate(target, make(target, folders, name, draft_length="confidence", threshold=1.0))
    assert tokens == ar
    for s in drafting(steps):
        assert s.record.draft_length == 1 and depth(s) == 1 and len(s.record.chance) == 1


@pytest.mark.parametrize("name", DRAFTERS)
def test_heuristic_depth_moves_up_two_after_a_full_acceptance_and_down_one_after_a_rejection(target, folders, name):
    most = DRAFTERS[name][2] if name in ("eagle", "medusa") else dl.MAX_K  # a static tree caps it
    steps = drafting(generate(target, make(target, folders, name, draft_length="heuristic"), 40)[1])
    moves = set()
    for s, nxt in zip(steps, steps[1:]):
        k, drafted = s.record.k, s.record.draft_length
        assert drafted == k  # no cut by confidence: the heuristic drafts its k
        full = len(s.accepted) == drafted
        assert nxt.record.k == (min(most, k + 2) if full else max(1, k - 1))
        moves.add(nxt.record.k - k)
    assert -1 in moves  # random heads miss: the depth comes down


def test_learned_cuts_trees_by_the_chance_along_the_best_branch(target, folders, ar):
    """A threshold no chance reaches: depth 1; one every chance beats: every depth."""
    for threshold, want in ((1.0, 1), (0.0, 4)):
        tokens, steps = generate(target, make(target, folders, "eagle3", draft_length="learned", threshold=threshold))
        assert tokens == ar and {s.record.draft_length for s in drafting(steps)} == {want}
        assert all(a >= b for s in drafting(steps) for a, b in zip(s.record.chance, s.record.chance[1:]))


def test_medusa_per_head_acceptance_counts_the_steps_that_kept_that_head(target, folders):
    from paradec.plots.medusa import head_acceptance
    from paradec.traces.trace import Trace

    steps = generate(target, make(target, folders, "medusa", draft_length="confidence", threshold=0.5))[1]
    trace = Trace(method="medusa", params={}, model="tiny", prompt="", prompt_ids=PROMPT, sampling={},
                  max_new_tokens=30, steps=steps)
    rows = head_acceptance(trace)
    kept = [[depth(s) >= d for s in drafting(steps)] for d in range(1, len(rows) + 1)]
    assert [r["steps"] for r in rows] == [sum(k) for k in kept] and len(set(map(sum, kept))) > 1


@pytest.mark.parametrize("name", ["eagle", "eagle3", "medusa", "early_exit"])
def test_bad_rules_are_one_line_errors(target, folders, name):
    with pytest.raises(ValueError, match="draft_length must be one of"):
        make(target, folders, name, draft_length="sometimes")
    with pytest.raises(ValueError, match="threshold must be between 0 and 1"):
        make(target, folders, name, draft_length="confidence", threshold=1.5)


def test_reach_along_a_path():
    sure, unsure = torch.tensor([0.9, 0.1]), torch.tensor([0.5, 0.5])
    rule = dl.make("confidence", 4, 0.6)
    assert dl.reach(rule, [sure, sure]) == 3  # it would go deeper
    assert dl.reach(rule, [sure, unsure, sure]) == 2 and rule.chances == pytest.approx([0.9, 0.5])
    assert dl.reach(dl.make("fixed", 2, 0.0), [sure] * 5) == 2


@pytest.mark.slow
@pytest.mark.parametrize("name,rule", [("early_exit", "heuristic"), ("eagle3", "confidence")])
def test_sampling_with_an_adaptive_rule_keeps_the_targets_distribution(tmp_path, name, rule):
    """The first three tokens against plain autoregressive sampling's exact distribution (as test_eagle's):
    the rule shapes the draft from q alone, and the verifier's rejection stays exact."""
    from test_eagle import _sample

    from stats import ALPHA, exact_joint, gof_pvalue

    model = tiny_model(16, seed=0, layers=2, hidden=32)
    with torch.no_grad():
        model.lm_head.weight.mul_(15.0)  # peaked p and q: drafts are often accepted, and confident
    if name == "eagle3":
        with torch.random.fork_rng():
            torch.manual_seed(0)
            head = eagle_head.EagleHead(model.config, 3, torch.arange(16))  # default init: the target's feature
        eagle_head.save(head, tmp_path / "h", model.config, {"test": True})
        make = lambda: build(Eagle3, model, head=str(tmp_path / "h"), depth=3, top_k=3, total_tokens=5,  # noqa: E731
                              lookup=0, draft_length=rule, threshold=0.5)
    else:
        make = lambda: build(EarlyExit, model, k=4, exit_layer=1, adapter="none", draft_length=rule)  # noqa: E731
    counts, accepted, _ = _sample(model, make, 0)
    assert accepted > 0.1 * 1000
    exact = exact_joint(model, [1, 2, 3, 1, 2], Sampler(temperature=1.0), 3)
    assert gof_pvalue(counts, exact) > ALPHA, counts.most_common(6)


@pytest.mark.slow
def test_eagle3_learned_on_the_embedded_model_equals_ar(embedded_q4):
    from paradec.run import run

    prompt = "Explain what a hash table is in two sentences."
    ar_run = run(embedded_q4, "ar", prompt, max_new_tokens=24)
    learned = run(embedded_q4, "eagle3", prompt, {"draft_length": "learned"}, max_new_tokens=24)
    assert learned.token_ids == ar_run.token_ids and learned.tau > 1.0
    assert all(s.record.chance is not None for s in learned.steps[1:])


def test_the_recorded_eagle3_runs_and_the_eagle_page_compare_the_rules():
    from streamlit.testing.v1 import AppTest

    from paradec.plots import draft_length as plots
    from ui import sources
    from ui.draft_length import RULES

    files = sources.recorded("eagle3")
    runs = {r: sources.load(files[r]) for r in RULES}
    assert {t.prompt for t in runs.values()} == {sources.load(sources.recorded("sps")["fixed"]).prompt}
    assert len({tuple(t.token_ids) for t in runs.values()}) == 1  # greedy: the same text whatever the rule
    assert set(plots.lengths(runs["fixed"])[1:]) == {runs["fixed"].params["depth"]}  # step 0 drafts nothing
    assert all(s.record.draft_length >= max(n.depth for n in s.nodes[:sum(c.kept for c in s.record.drafted)])
               for t in runs.values() for s in t.steps[1:])  # the head's nodes; a copied branch may go deeper
    assert [r["rule"] for r in plots.rows(runs)] == list(RULES)
    assert plots.lengths_figure(runs, unit="depths").layout.yaxis.title.text == "depths drafted"
    assert sum(r["tokens"] for r in plots.calibration(runs["learned"])) == sum(
        len(s.record.chance) for s in runs["learned"].steps[1:])

    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("views/eagle.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("draft" in s.value and "rules" in s.value for s in at.subheader)
    assert at.selectbox(key="eagle3.draft_length").options == list(RULES)
