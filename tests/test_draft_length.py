"""Adaptive draft length: each rule on hand-made q vectors, the stop predictor's fit on small
synthetic sets, greedy equality with AR for every rule, the step records the page plots, and
`python -m paradec.train stop` end to end on a tiny model."""
import json
import math

import pytest
import torch

from paradec.core.drafter import Drafter
from paradec.core.engine import decode
from paradec.core.sampling import Sampler
from paradec.drafters import draft_length as dl
from paradec.drafters.sps import SpeculativeSampling
from paradec.models import load_draft
from paradec.train.__main__ import main as train_main
from paradec.train.answers import generate_shards
from paradec.train.stop import auc, fit, predict

from helpers import APP, build, tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")

SURE, UNSURE = torch.tensor([0.7, 0.2, 0.1, 0.0]), torch.tensor([0.3, 0.3, 0.2, 0.2])


def drafted(rule, qs) -> int:
    """How many of these q's the rule drafts in one step."""
    for i, q in enumerate(qs):
        if not rule.continue_after(i, q):
            return i + 1
    return len(qs)


def test_features_of_a_hand_made_q():
    q_max, margin, entropy, position = dl.features(3, torch.tensor([0.5, 0.3, 0.2, 0.0]))
    assert (q_max, position) == (0.5, 3.0) and margin == pytest.approx(0.2)
    assert entropy == pytest.approx(-(0.5 * math.log(0.5) + 0.3 * math.log(0.3) + 0.2 * math.log(0.2)))


def test_fixed_drafts_k_whatever_q_says():
    rule = dl.make("fixed", 3, 0.9)
    assert drafted(rule, [UNSURE] * 8) == 3 and rule.chances == [None] * 3
    rule.update(0, 3)
    assert drafted(rule, [SURE] * 8) == 3


def test_confidence_stops_at_the_first_q_below_the_threshold():
    rule = dl.make("confidence", 8, 0.5)
    assert drafted(rule, [SURE, SURE, UNSURE, SURE]) == 3  # the unsure token is drafted, then it stops
    assert rule.chances == pytest.approx([0.7, 0.7, 0.3])
    assert drafted(rule, [SURE] * 10) == 8  # k caps it
    assert drafted(dl.make("confidence", 8, 0.0), [UNSURE] * 10) == 8


def test_heuristic_grows_by_two_and_shrinks_by_one_within_bounds():
    rule = dl.make("heuristic", 4, 0.4)
    rule.update(4, 4)
    assert rule.k == 6 and drafted(rule, [UNSURE] * 20) == 6
    rule.update(2, 6)
    assert rule.k == 5
    for _ in range(10):
        rule.update(0, rule.k)
    assert rule.k == 1
    for _ in range(10):
        rule.update(rule.k, rule.k)
    assert rule.k == dl.MAX_K


def test_learned_stops_when_the_chain_chance_falls_below_the_threshold():
    half = dl.Predictor([0.0, 0.0, 0.0, 0.0], 0.0)  # every token: 0.5
    rule = dl.make("learned", 8, 0.2, half)
    assert drafted(rule, [SURE] * 8) == 3 and rule.chances == pytest.approx([0.5, 0.25, 0.125])
    assert drafted(rule, [SURE] * 8) == 3  # a new step starts the product again
    trusts_q = dl.Predictor([20.0, 0.0, 0.0, 0.0], -10.0)  # sigmoid(20 q_max - 10)
    rule = dl.make("learned", 8, 0.5, trusts_q)
    assert drafted(rule, [SURE, SURE, UNSURE, SURE]) == 3
    assert rule.chances[2] < 0.5 < rule.chances[1]
    with pytest.raises(ValueError, match="stop predictor"):
        dl.make("learned", 4, 0.5)


def test_predictor_files_are_checked(tmp_path):
    assert len(dl.Predictor.load().weights) == len(dl.FEATURES)  # the shipped one
    bad = tmp_path / "stop.json"
    for text in ["{", json.dumps({"features": ["q_max"], "weights": [1.0], "bias": 0}),
                 json.dumps({"features": list(dl.FEATURES), "weights": [1, 2, 3, float("nan")], "bias": 0})]:
        bad.write_text(text)
        with pytest.raises(ValueError, match="stop predictor"):
            dl.Predictor.load(bad)


def test_fit_separates_a_separable_set_and_stays_finite():
    x = torch.tensor([[-2.0], [-1.5], [-1.0], [-0.5], [0.5], [1.0], [1.5], [2.0]], dtype=torch.float64)
    y = (x[:, 0] > 0).double()
    w, b = fit(x, y, l2=1e-2)
    p = predict(x, w, b)
    assert torch.isfinite(w).all() and math.isfinite(b)
    assert (p[y > 0] > 0.8).all() and (p[y == 0] < 0.2).all()
    assert auc(p, y) == 1.0


def test_fit_recovers_the_weights_of_logistic_data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(20000, 2, generator=g, dtype=torch.float64)
    y = (torch.rand(20000, generator=g, dtype=torch.float64) < torch.sigmoid(2 * x[:, 0] - x[:, 1] - 0.5)).double()
    w, b = fit(x, y, l2=0.0)
    assert w.tolist() == pytest.approx([2.0, -1.0], abs=0.1) and b == pytest.approx(-0.5, abs=0.1)
    assert auc(torch.tensor([0.1, 0.4, 0.35, 0.8]), torch.tensor([0.0, 0.0, 1.0, 1.0])) == 0.75


V = 64


@pytest.fixture(scope="module")
def pair():
    target = tiny_model(V, seed=0)
    with torch.no_grad():
        target.lm_head.weight.mul_(8.0)  # peaky distributions: drafts are sometimes confident
    draft = tiny_model(V, seed=1)
    with torch.no_grad():
        draft.lm_head.weight.mul_(8.0)
    return target, draft


def tokens_of(target, drafter, prompt, n):
    steps = list(decode(target, drafter, prompt, n, Sampler()))
    return [t for s in steps for t in s.tokens], steps


@pytest.mark.parametrize("rule", dl.SCHEDULES)
@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.9])
def test_every_rule_gives_ar_tokens_and_records_its_draft_lengths(pair, rule, threshold):
    target, draft = pair
    prompt = [3, 14, 15, 9, 2, 6, 3, 14]
    ar, _ = tokens_of(target, Drafter(), prompt, 40)
    drafter = build(SpeculativeSampling, draft, k=5, draft_length=rule, threshold=threshold)
    out, steps = tokens_of(target, drafter, prompt, 40)
    assert out == ar
    for s in steps:
        assert s.record.draft_length == len(s.nodes) <= s.record.k
        assert (s.record.chance is not None) == (rule in ("confidence", "learned"))
        if rule in ("confidence", "learned"):
            chances = s.record.chance
            assert len(chances) == len(s.nodes)
            assert all(c >= threshold for c in chances[:-1])  # it went on only while the chance held
            assert len(s.nodes) == s.record.k or chances[-1] < threshold


@pytest.fixture(scope="module")
def shards(tiny_loaded, tmp_path_factory):
    """Twenty distinct prompts: the predictor fits and scores on the draft's held-out prompts."""
    data = tmp_path_factory.mktemp("data")
    prompts = [f"Say {w} twice." for w in "one two three four five six seven eight nine ten".split()]
    prompts += [f"Name a {w}." for w in "colour fruit city river tree bird fish tool game song".split()]
    generate_shards(tiny_loaded, prompts, data, samples=1, batch=10, max_new_tokens=10)
    return data


def test_train_command_end_to_end(tiny_loaded, tiny_dir, shards, tmp_path):
    out = tmp_path / "draft"
    data_args = ["--data", str(shards), "--features", str(shards)]  # answers and features together
    assert train_main(["draft", *data_args, "--model", str(tiny_dir), "--layers", "1", "--vocab", "64",
                       "--steps", "4", "--out", str(out)]) == 0
    assert train_main(["stop", *data_args, "--model", str(tiny_dir), "--draft", f"trained:{out}",
                       "--threads", "1"]) == 0
    stop = json.loads((out / "stop.json").read_text())
    assert stop["features"] == list(dl.FEATURES) and len(stop["weights"]) == len(dl.FEATURES)
    assert stop["trained"]["samples"] > 0 and "paradec.train stop" in stop["trained"]["command"]
    draft = load_draft(f"trained:{out}", tiny_loaded)
    assert draft.model.stop_file == out / "stop.json"  # the draft brings its own predictor
    drafter = build(SpeculativeSampling, draft.model, k=4, draft_length="learned", threshold=0.1)
    assert drafter.schedule.predictor.weights == stop["weights"]
    model, prompt = tiny_loaded.model, [1, 5, 9, 13, 2]
    assert tokens_of(model, drafter, prompt, 16)[0] == tokens_of(model, Drafter(), prompt, 16)[0]


def test_the_comparison_figures_on_the_recorded_runs():
    from paradec.plots import draft_length as plots
    from ui import sources
    from ui.draft_length import RULES

    files = sources.recorded("sps")
    runs = {r: sources.load(files[r]) for r in RULES}
    assert len({t.prompt for t in runs.values()}) == 1
    assert set(plots.lengths(runs["fixed"])) == {runs["fixed"].params["k"]}
    for t in runs.values():
        assert plots.lengths(t) == [len(s.nodes) for s in t.steps]
    rows = plots.rows(runs)
    assert [r["rule"] for r in rows] == list(RULES) and all(r["τ"] >= 1 for r in rows)
    assert len(plots.lengths_figure(runs).data) == 4 and len(plots.time_figure(runs).data) == 2
    cal = plots.calibration(runs["learned"])
    assert sum(r["tokens"] for r in cal) == runs["learned"].drafted
    assert all(0 <= r["predicted"] <= 1 and 0 <= r["committed"] <= 1 for r in cal)


def test_calibration_of_a_hand_made_trace():
    from paradec.core.records import DraftLength
    from paradec.core.steps import Node, Step
    from paradec.plots.draft_length import calibration
    from paradec.traces.trace import Trace

    def step(chances, accepted):
        nodes = [Node(token=1, parent=i - 1, depth=i + 1, status="accepted" if i < accepted else "rejected")
                 for i in range(len(chances))]
        return Step(index=0, context_len=1, nodes=nodes, accepted=list(range(accepted)), tokens=[1], origins=["target"],
                    record=DraftLength(chance=chances, draft_length=len(chances)))

    t = Trace(method="sps", params={}, model="", prompt="", prompt_ids=[], sampling={}, max_new_tokens=0,
              steps=[step([0.9, 0.5], 1), step([0.95, 0.1], 2)])
    assert calibration(t) == [{"predicted": 0.1, "committed": 1.0, "tokens": 1},
                              {"predicted": 0.5, "committed": 0.0, "tokens": 1},
                              {"predicted": 0.925, "committed": 1.0, "tokens": 2}]


def test_the_sps_page_shows_the_comparison():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("views/sps.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("draft" in s.value and "rules" in s.value for s in at.subheader)
    assert at.selectbox(key="sps.draft_length").options == ["fixed", "heuristic", "confidence", "learned"]
    assert at.selectbox(key="sps.recorded").value == "fixed"  # a fixed k: several drafted, some rejected
