"""The acceptance α has one definition: accepted drafts / tested ones, a depth being tested when the
accepted path reached the depth before it (paradec.traces.trace.Trace.depth_acceptance). On a tree, siblings
and nodes under a rejected one are not tests; on a chain it is the α of τ's i.i.d. model; AR has none.
The shipped traces and results files show it, or, for results files that never counted tests, the old
ratio under its own name."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from paradec import bench_report
from paradec.core.steps import Node, Step
from paradec.costs.speccost import chain_tau
from paradec.traces.trace import Trace, step_tested
from ui import bench as ui_bench

from helpers import APP

ROOT = Path(__file__).resolve().parent.parent
NOT_STEPS = {"machine.json", "forward_cost.json"}  # measurements beside the traces, not step traces
SHIPPED = sorted(p for p in (ROOT / "assets" / "traces").rglob("*.json") if p.name not in NOT_STEPS)


def step(nodes: list[Node], accepted: list[int]) -> Step:
    return Step(0, 5, nodes, accepted, [1] * (len(accepted) + 1), ["accepted"] * len(accepted) + ["resampled"])


def trace(steps: list[Step], k: int = 3) -> Trace:
    return Trace("sps", {"k": k}, "m", "p", [1, 2], {}, 64, steps)


def chain(k: int, accepted: int) -> Step:
    """A chain of k drafts whose first `accepted` pass and the next (if any) is rejected; the rest untested."""
    status = ["accepted"] * accepted + ["rejected"] * (accepted < k) + ["unreached"] * (k - accepted - 1)
    return step([Node(10 + d, d - 1, d + 1, status=s) for d, s in enumerate(status)], list(range(accepted)))


def test_a_tree_counts_one_test_per_depth_reached():
    # pending -> a (accepted), b and c (siblings of a, never tested: greedy stops at a);
    # a -> d (rejected), e (rejected); d -> f (under a rejected node: untested)
    tree = [Node(1, -1, 1, status="accepted"), Node(2, -1, 1), Node(3, -1, 1),
            Node(4, 0, 2, status="rejected"), Node(5, 0, 2, status="rejected"), Node(6, 3, 3)]
    t = trace([step(tree, [0])])
    assert t.depth_acceptance() == [(1, 1, 1), (2, 1, 0)]  # depth 3 was drafted, never tested
    assert t.tested == 2 and t.acceptance == 0.5
    assert t.drafted_accepted == pytest.approx(1 / 6)  # the old ratio: every node counted


def test_a_rejected_sibling_is_the_same_test_as_the_accepted_one():
    # sampling tries b, rejects it, tries a, accepts it: one depth-1 test, passed; a has no child
    t = trace([step([Node(2, -1, 1, status="rejected"), Node(1, -1, 1, status="accepted")], [1])])
    assert t.depth_acceptance() == [(1, 1, 1)] and t.acceptance == 1.0


def test_a_chain_tests_node_d_when_1_to_d_minus_1_passed():
    t = trace([chain(4, 0), chain(4, 2), chain(4, 4)])
    # depth 1: 3 tests, 2 passed; depth 2: 2, 2; depth 3: 2 (2 rejected it), 1; depth 4: 1, 1
    assert t.depth_acceptance() == [(1, 3, 2), (2, 2, 2), (3, 2, 1), (4, 1, 1)]
    assert [step_tested(s) for s in t.steps] == [1, 3, 4]
    assert t.acceptance == pytest.approx(6 / 8) and t.drafted_accepted == pytest.approx(6 / 12)


def test_a_draft_cut_by_the_budget_was_not_tested_past_the_cut():
    # the target agreed with all 3 but only 2 tokens fitted: the third is unreached, no test
    nodes = [Node(10 + d, d - 1, d + 1, status=s) for d, s in enumerate(["accepted", "accepted", "unreached"])]
    t = trace([step(nodes, [0, 1])])
    assert t.depth_acceptance() == [(1, 1, 1), (2, 1, 1)] and t.acceptance == 1.0


def test_ar_has_no_acceptance():
    t = Trace("ar", {}, "m", "p", [1], {}, 4, [step([], []) for _ in range(4)])
    assert t.acceptance is None and t.drafted_accepted is None and t.depth_acceptance() == []
    assert t.summary()["acceptance"] is None


def test_the_chain_model_with_the_tested_alpha_gives_the_runs_tau():
    # k = 3, α = 1/2 i.i.d.: 0, 1, 2 and 3 accepted in 1/2, 1/4, 1/8 and 1/8 of the steps
    t = trace([chain(3, a) for a in [0, 0, 0, 0, 1, 1, 2, 3]])
    assert t.tau == 15 / 8 and t.acceptance == 7 / 14
    assert chain_tau(t.acceptance, 3) == pytest.approx(t.tau)
    assert chain_tau(t.drafted_accepted, 3) < t.tau - 0.4  # the old ratio (7 / 24) does not


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT / "assets" / "traces")))
def test_shipped_traces_never_show_acceptance_below_the_drafted_ratio(path):
    t = Trace.load(path)
    if not t.drafted:
        assert t.acceptance is None
        return
    assert t.acceptance >= t.drafted_accepted
    assert all(len(s.accepted) <= step_tested(s) <= len(s.nodes) for s in t.steps)
    assert sum(n for _, n, _ in t.depth_acceptance()) == t.tested


def test_results_files_report_the_tested_alpha():
    recs = [({"category": "c"}, {"tokens": [1] * 3, "wall_s": 1.0, "forwards": 2, "drafted": 8, "tested": 3,
                                 "accepted": 1, "positions": [(1, 2, 1)]})]
    ar = [({"category": "c"}, {"tokens": [1] * 3, "wall_s": 2.0, "forwards": 3, "drafted": 0, "tested": 0,
                               "accepted": 0, "positions": []})]
    m, base = bench_report.metrics(recs, ar), bench_report.metrics(ar, ar)
    assert m["acceptance"] == round(1 / 3, 3) and m["drafted_accepted"] == round(1 / 8, 3)
    assert base["acceptance"] is None is base["drafted_accepted"]


@pytest.mark.parametrize("path", sorted((ROOT / "assets" / "bench").glob("*.json")), ids=lambda p: p.stem)
def test_old_results_files_keep_their_ratio_under_its_own_name(path):
    report = bench_report.load(path)
    if bench_report.tested_counted(report):
        return
    for m in report["methods"].values():
        assert m["acceptance"] is None and "acceptance_rate" not in m
        assert (m["drafted_accepted"] is None) == (not m["acceptance_by_position"])
    rows = ui_bench.table(report, bench_report.csv_rows(report))
    assert all("acceptance α" not in r and "drafted tokens accepted" in r for r in rows)


def test_the_sps_page_models_tau_from_the_tested_alpha():
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["trace"] = "fixed"
    at.run()
    at.switch_page("views/sps.py").run()
    assert not at.exception, [e.value for e in at.exception]
    t = Trace.load(ROOT / "assets" / "traces" / "sps-fixed.json")
    shown = {m.label: m.value for m in at.metric}
    assert shown["acceptance (run)"] == f"{t.acceptance:.0%}"
    assert shown["τ if i.i.d. (MODEL)"] == f"{chain_tau(t.acceptance, t.params['k']):.2f}"
