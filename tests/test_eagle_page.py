"""The EAGLE page: its figure builders on real tiny-model traces (growth frames, rerank, cut
table, kept candidates = verified nodes), acceptance per depth on a hand-made trace, the
comparison, and the page itself (AppTest) on the recorded traces."""
import ast
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from paradec import methods, run
from paradec.core.steps import Node, Step
from paradec.drafters import eagle_head
from paradec.drafters.eagle import TREES
from paradec.plots import eagle as plots
from paradec.traces.trace import Trace
from paradec.tuning import presets
from ui import sources

from helpers import APP, drawn, go_to, player

pytestmark = pytest.mark.usefixtures("one_thread")
ROOT = Path(__file__).resolve().parents[1]
DYNAMIC = {"depth": 3, "top_k": 3, "total_tokens": 7}


def head_dir(loaded, version: int, folder: Path) -> str:
    """A random EAGLE head for the tiny target (EAGLE-3's draft vocabulary: the first 500 ids)."""
    head = eagle_head.EagleHead(loaded.model.config, version, torch.arange(500) if version == 3 else None)
    gen = torch.Generator().manual_seed(version)
    with torch.no_grad():
        for p in head.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.2)
    eagle_head.save(head, folder, loaded.model.config, {"test": True})
    return str(folder)


@pytest.fixture(scope="module")
def traces(tiny_loaded, tmp_path_factory):
    folder = tmp_path_factory.mktemp("heads")
    h1, h3 = head_dir(tiny_loaded, 1, folder / "h1"), head_dir(tiny_loaded, 3, folder / "h3")
    runs = {"eagle": ("eagle", {"head": h1}), "eagle2": ("eagle2", {"head": h1, **DYNAMIC}),
            "eagle3": ("eagle3", {"head": h3, **DYNAMIC})}
    return {name: run.run(tiny_loaded, m, "Tell me about cats.", p, max_new_tokens=10) for name, (m, p) in runs.items()}


def drafting_steps(trace):
    """The steps the head drafted in (the first has at most a prompt-lookup branch: no features yet)."""
    return [i for i, s in enumerate(trace.steps) if s.record.drafted]


def test_growth_frames_count_the_candidates_of_each_depth(traces):
    """Dynamic tree: depth 1 has top_k candidates, depth d top_k per expanded candidate of
    depth d-1, of which the top_k are expanded; frame d shows exactly depths 1..d."""
    t, k = traces["eagle2"], DYNAMIC["top_k"]
    for i in drafting_steps(t):
        counts = plots.depth_counts(plots.candidates(t, i))
        assert [r["depth"] for r in counts] == [1, 2, 3]
        expanded_before = 1
        for r in counts:
            assert r["drafted"] == k * expanded_before
            assert r["expanded"] == (min(k, r["drafted"]) if r["depth"] < DYNAMIC["depth"] else 0)
            expanded_before = r["expanded"]
        for d in (1, 2, 3):
            fig = plots.growth_figure(t, i, d)
            shown = sum(len(tr.x) for tr in fig.data if tr.name in ("expanded", "not expanded"))
            assert shown == sum(r["drafted"] for r in counts[:d])
        final = plots.growth_figure(t, i)
        assert sum(len(tr.x) for tr in final.data if tr.name in ("accepted", "kept")) == DYNAMIC["total_tokens"]


def test_kept_candidates_are_the_verified_nodes(traces):
    for t in traces.values():
        for i in drafting_steps(t):
            cands, nodes = plots.candidates(t, i), t.steps[i].nodes
            index = plots.kept_nodes(cands)
            kept = [c for c in cands if c.kept]  # the step's first nodes; a prompt-lookup branch's own come after
            assert [c.token for c in kept] == [n.token for n in nodes[:len(kept)]]
            assert [index.get(c.parent, -1) for c in kept] == [n.parent for n in nodes[:len(kept)]]
            assert set(range(len(kept), len(nodes))) <= set(t.steps[i].record.looked_up)
            assert all(str(c.token) in t.token_text for c in cands)  # cut ones replay with their text too


def test_cut_table_lists_exactly_the_candidates_below_the_threshold(traces):
    for name, t in traces.items():
        for i in drafting_steps(t):
            cands = plots.candidates(t, i)
            rows = plots.cut_rows(t, i)
            assert [r["candidate"] for r in rows] == [c.index for c in cands if not c.kept]
            thr = plots.threshold(cands)
            assert all(r["confidence"] <= thr + 1e-4 for r in rows)
            if name == "eagle":  # a static tree verifies every candidate
                assert not rows and len(cands) == len(TREES["cpu10"])


def test_page_tree_presets_match_the_drafter():
    module = ast.parse((ROOT / "views" / "eagle.py").read_text())
    assigned = {t.id: n.value for n in module.body if isinstance(n, ast.Assign) for t in n.targets}
    names = ast.literal_eval(assigned["TREES"])
    assert sorted(names) == sorted(TREES) and names[0] == methods.defaults("eagle")["tree"]  # first = the default


def hand_trace() -> Trace:
    """Three drafting steps over one chain a -> b and a sibling c of a, greedy: step 1 accepts a and b,
    step 2 accepts a and rejects b, step 3 rejects a and accepts c (node 2, no child)."""
    statuses = (("accepted", "accepted", "unreached"), ("accepted", "rejected", "unreached"),
                ("rejected", "unreached", "accepted"))
    steps = [Step(0, 4, [], [], [9], ["target"])]
    for k, (acc, st) in enumerate(zip(([0, 1], [0], [2]), statuses), 1):
        nodes = [Node(1, -1, 1, status=st[0]), Node(2, 0, 2, status=st[1]), Node(3, -1, 1, status=st[2])]
        steps.append(Step(k, 5 + k, nodes, acc, [1] * (len(acc) + 1), ["accepted"] * len(acc) + ["bonus"]))
    return Trace("eagle", {}, "m", "p", [1, 2, 3, 4], {}, 8, steps)


def test_depth_acceptance_is_conditional_on_reaching_the_depth_before():
    rows = plots.depth_acceptance(hand_trace())
    # depth 1: all three steps tested a depth-1 slot under the pending token, all filled it (a, a, c).
    # depth 2: steps 1 and 2 reached a and tested b, step 1 accepted it; step 3 reached c, which has no child.
    assert [(r["depth"], r["tested"], r["accepted"]) for r in rows] == [(1, 3, 3), (2, 2, 1)]
    assert rows[1]["rate"] == 0.5


def test_compare_rows_and_figures(traces):
    rows = plots.compare_rows(traces)
    assert [r["run"] for r in rows] == ["eagle", "eagle2", "eagle3"]
    for r, t in zip(rows, traces.values()):
        assert r["τ"] == round(t.tau, 2) and r["tokens / s"] > 0
        assert r["tokens verified / step"] <= 1 + max(len(s.nodes) for s in t.steps)
    assert set(plots.compare_figures(traces)) == {"tau", "speed", "lengths", "time"}


def open_eagle(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(query)
    at.run()
    at.switch_page("views/eagle.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_page_grows_the_tree_and_compares_the_versions():
    at = open_eagle()
    assert at.radio(key="eagle.version").value == "eagle3" and not at.warning
    tuned = presets.tuned("cpu")[0]["eagle3"]  # the widgets start on the settings the recorded runs used
    assert [at.slider(key=f"eagle3.{k}").value for k in ("depth", "top_k", "total_tokens")] == [
        tuned["depth"], tuned["top_k"], tuned["total_tokens"]]
    text = " ".join(m.value for m in at.markdown)
    assert "EAGLE-3" in text and "training-time test" in text and "MODEL" in text and "MEASURED" in text
    assert any("on the same prompt" in s.value for s in at.subheader)
    hit = drafting_steps(sources.load(sources.recorded("eagle3")["greedy"]))[0]
    go_to(at, "eagle3", hit + 1)
    assert "growth" in player(at, "eagle3")["frames"][hit]["figs"]  # the reranked tree, animated
    assert at.select_slider(key=f"eagle3.grow.{hit}").value == "rerank"
    at.select_slider(key=f"eagle3.grow.{hit}").set_value(1).run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "Cut by the rerank" in text and "Acceptance per depth" in text
    assert "The prompt-lookup branch" in text and "Over the run: a copied branch on" in text  # lookup is on


@pytest.mark.parametrize("version", ["eagle", "eagle2"])
def test_each_version_replays_its_own_recorded_trace(version):
    at = open_eagle(version=version, step="3")
    assert at.radio(key="eagle.version").value == version and player(at, version)["step"] == 3
    assert any(f"Trace: {version} " in c.value for c in at.caption)
    if version == "eagle":
        assert at.selectbox(key="eagle.tree").value == "cpu10"
        assert "EAGLE-1's static tree verifies every candidate" in " ".join(m.value for m in at.markdown)


@pytest.mark.slow  # a second page render (the sampled trace's frames); the greedy ones stay in the fast tier
def test_sampled_trace_replays():
    at = open_eagle(trace="sampled", step="2")
    assert at.selectbox(key="eagle3.recorded").value == "sampled" and not at.exception


@pytest.mark.slow
def test_live_run_with_other_settings_lands_beside_the_recorded_run():
    """depth / top_k / total_tokens go through ui.live to a real run on the embedded model."""
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["sb.source"] = "live"
    at.session_state["sb.max_new"] = 8
    at.run()
    at.switch_page("views/eagle.py").run()
    at.slider(key="eagle3.depth").set_value(2).run()
    at.slider(key="eagle3.total_tokens").set_value(5).run()
    at.button(key="eagle3.run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.exception] + [e.value for e in at.error]
    assert any("depth = 2" in c.proto.help and "total_tokens = 5" in c.proto.help for c in at.caption)  # its tooltip
    drawn(at)  # the details follow the live trace's player
    assert any("vs recorded" in (m.delta or "") for m in at.metric)
    runs = next(d.value for d in at.dataframe if "settings" in d.value.columns)
    assert len(runs) == 2 and any('"depth": 2' in v for v in runs["settings"])  # the live run beside the recorded one
