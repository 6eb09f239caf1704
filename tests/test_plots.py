"""The pure figure builders (paradec.plots) on a hand-made trace: no torch, no streamlit."""
import json

import numpy as np
import pytest

from paradec import tree
from paradec.plots import arena, jacobi, kpis, lookahead, microscope
from paradec.plots.mask import ALLOWED, BLOCKED, CONTEXT, mask_figure, mask_matrix
from paradec.plots.tokens import label, stream_html
from paradec.plots.tree import FINAL, ROOT, graph, positions, tree_figure
from paradec.speccost import chain_tau
from paradec.trace import Node, Step, Trace

P_TOP = [[5, 0.5], [6, 0.3], [7, 0.1], [8, 0.05]]
Q_TOP = [[6, 0.6], [5, 0.2], [9, 0.1], [7, 0.05]]


def make_trace(temperature=0.7) -> Trace:
    chain = [  # node 0 accepted, node 1 rejected, node 2 never tested
        Node(5, -1, 1, q=0.2, q_top=Q_TOP, p=0.5, p_top=P_TOP, accept_prob=1.0, u=0.4, status="accepted"),
        Node(6, 0, 2, q=0.6, q_top=Q_TOP, p=0.3, p_top=P_TOP, accept_prob=0.5, u=0.9, status="rejected"),
        Node(9, 1, 3),
    ]
    sibling_tree = [  # a tree: two children of the pending token, the second accepted
        Node(8, -1, 1, q=0.3, q_top=Q_TOP, p=0.05, p_top=P_TOP, accept_prob=0.17, u=0.5, status="rejected"),
        Node(5, -1, 1, q=0.2, q_top=Q_TOP, p=0.5, p_top=P_TOP, accept_prob=1.0, u=0.1, status="accepted"),
        Node(7, 1, 2, q=0.05, q_top=Q_TOP, p=0.1, p_top=P_TOP, accept_prob=1.0, u=0.2, status="accepted"),
    ]
    steps = [
        Step(0, 3, [], [], [7], ["target"], last_p_top=P_TOP, verified=3, verify_ms=20.0),
        Step(1, 4, chain, [0], [5, 7], ["accepted", "resampled"], last_p_top=P_TOP, residual_top=[[7, 0.8], [8, 0.2]],
             draft_forwards=3, verified=4, draft_ms=9.0, verify_ms=11.0),
        Step(2, 6, sibling_tree, [1, 2], [5, 7, 6], ["accepted", "accepted", "bonus"], last_p_top=P_TOP,
             draft_forwards=2, verified=4, draft_ms=5.0, verify_ms=12.0),
    ]
    text = {str(i): t for i, t in enumerate(["<s>", "Hi", "\n", " the", " mat", " cat", " sat", " on", "<b>", " x"])}
    return Trace("sps", {"k": 3}, "m", "Hi", [0, 1, 2], {"temperature": temperature, "top_p": 1.0, "top_k": 0, "seed": 0},
                 8, steps, text, wall_s=0.1)


def test_tree_graph_hangs_the_target_token_where_the_path_ends():
    t = make_trace()
    g = graph(t, 1)
    assert set(g.successors(ROOT)) == {0}
    assert set(g.successors(0)) == {1, FINAL}  # resampled token beside the rejected node
    g2 = graph(t, 2)
    assert set(g2.successors(ROOT)) == {0, 1} and list(g2.successors(2)) == [FINAL]
    assert list(graph(t, 0).successors(ROOT)) == [FINAL]  # nothing drafted: pending -> target token


def test_positions_put_depth_on_x_and_parents_between_children():
    g = graph(make_trace(), 2)
    pos = positions(g)
    assert pos[ROOT][0] == 0 and pos[0][0] == pos[1][0] == 1 and pos[FINAL][0] == 3
    ys = [pos[0][1], pos[1][1]]
    assert min(ys) <= pos[ROOT][1] <= max(ys)


@pytest.mark.parametrize("i", [0, 1, 2])
def test_figures_build_and_serialise(i):
    t = make_trace()
    for fig in (tree_figure(t, i, selected=0 if t.steps[i].nodes else None), mask_figure(t, i, 0 if t.steps[i].nodes else None),
                kpis.tokens_figure(t, i), kpis.time_figure(t, i), kpis.position_figure(t)):
        json.loads(fig.to_json())


def test_mask_matrix_is_the_library_mask_with_a_context_band():
    t = make_trace()
    z, rows, cols = mask_matrix(t, 2)
    want = tree.mask_rows([-1, -1, 1])
    assert [r[1:] for r in z] == [[ALLOWED if ok else BLOCKED for ok in row] for row in want]
    assert all(r[0] == CONTEXT for r in z)
    assert cols[0] == "context (5 tokens)" and len(rows) == 4


def test_stream_colours_each_origin_and_escapes_html():
    t = make_trace()
    html = stream_html(t, 2)
    assert "&lt;b&gt;" in html and "<b>" not in html  # a token's text never becomes markup
    assert "line-through" in html  # the rejected draft
    assert "min(1,p/q)=0.500" in html
    assert stream_html(t, 2, show_rejected=False).count("line-through") == 0


def test_label_makes_whitespace_visible():
    assert label(" the\n") == "·the↵" and label("") == "∅"


def test_buckets_are_distributions_with_exact_masses():
    node = make_trace().steps[1].nodes[1]
    keys, p, q = microscope.buckets(node)
    assert keys[-1] == microscope.OTHER and set(keys[:-1]) == {5, 6, 7}
    assert p.sum() == pytest.approx(1) and q.sum() == pytest.approx(1)
    assert p[keys.index(6)] == pytest.approx(0.3) and q[keys.index(6)] == pytest.approx(0.6)


def test_simulation_of_the_rule_lands_on_p_not_q():
    p, q = np.array([0.5, 0.3, 0.15, 0.05]), np.array([0.1, 0.6, 0.1, 0.2])
    counts, kept = microscope.simulate(p, q, n=20000, seed=1)
    assert np.abs(counts / 20000 - p).max() < 0.015
    assert kept == pytest.approx(np.minimum(p, q).sum(), abs=0.015)  # P(accept) = sum min(p, q)
    again, _ = microscope.simulate(p, q, n=20000, seed=1)
    assert (again == counts).all()  # seeded


def test_microscope_figures_build():
    t = make_trace()
    node = t.steps[1].nodes[1]
    for fig in (microscope.pq_figure(t, node), microscope.accept_figure(node),
                microscope.residual_figure(t, t.steps[1].residual_top), microscope.histogram_figure(t, node, 500)):
        json.loads(fig.to_json())


def test_kpis_follow_the_one_definition():
    t = make_trace()
    assert kpis.running_tau(t, 0) == 1.0
    assert kpis.running_tau(t, 2) == pytest.approx(6 / 3)
    assert t.by_position() == [(1, 2, 2), (2, 2, 1), (3, 1, 0)]
    assert chain_tau(0.0, 4) == 1.0 and chain_tau(1.0, 4) == 5.0
    assert chain_tau(0.5, 2) == pytest.approx(1.75)


def test_arena_race_counts_tokens_on_measured_time():
    t = make_trace()
    ends = arena.finish_times(t)
    assert ends == pytest.approx([20.0, 40.0, 57.0])
    assert arena.tokens_at(t, ends, 39.0) == 1 and arena.tokens_at(t, ends, 57.0) == 6
    fig = arena.race_figure({"ar": t, "sps": t}, frames=5)
    assert len(fig.frames) == 6 and list(fig.frames[-1].data[0].x) == [6, 6]
    json.loads(arena.length_histogram({"ar": t}).to_json())
    json.loads(arena.bars_figure({"ar": 1.0, "sps": 2.0}, "τ").to_json())


def test_cost_figure_draws_every_repeat_and_the_median():
    cost = {"model": "m", "device": "cpu", "tokens": [1, 8], "median_ms": [80.0, 130.0],
            "all_ms": [[79.0, 80.0, 90.0], [120.0, 130.0, 140.0]]}
    fig = kpis.cost_figure(cost)
    assert len(fig.data) == 3 and list(fig.data[-1].y) == [80.0, 130.0]


def jacobi_trace() -> Trace:
    """Block of 3 after prompt [0, 1, 2]. Iteration 1: no guess is right, the target commits 7.
    Iteration 2 (positions 1..3): guesses 6, 5 are fixed points, guess 9 is not: 6, 5 and the
    target's 8 are committed. Guess 5 at position 2 did not change since iteration 1."""
    chain = lambda toks, statuses: [Node(t, k - 1, k + 1, status=s) for k, (t, s) in enumerate(zip(toks, statuses))]
    steps = [
        Step(0, 3, chain([5, 5, 5], ["rejected", "unreached", "unreached"]), [], [7], ["resampled"], verified=6,
             extras={"block": [5, 5, 5], "changed": [True, True, True]}),
        Step(1, 4, chain([6, 5, 9], ["accepted", "accepted", "rejected"]), [0, 1], [6, 5, 8],
             ["accepted", "accepted", "resampled"], verified=4, extras={"block": [6, 5, 9], "changed": [True, False, True]}),
    ]
    text = {str(i): f"t{i}" for i in range(10)}
    return Trace("jacobi", {"block": 3, "init": "repeat"}, "m", "Hi", [0, 1, 2], {"temperature": 0.0}, 8, steps, text)


def test_convergence_grid_cells_are_changed_stable_or_committed():
    t = jacobi_trace()
    first, second = jacobi.cells(t, 0), jacobi.cells(t, 1)
    assert [(c["position"], c["state"]) for c in first] == [(0, "committed"), (1, "changed"), (2, "changed")]
    assert first[0]["token"] == 7 and not first[0]["fixed"]  # the target's own token replaced guess 5
    assert [(c["position"], c["state"], c["token"], c["fixed"]) for c in second] == [
        (1, "committed", 6, True), (2, "committed", 5, True), (3, "committed", 8, False)]
    still = Trace.from_dict(t.to_dict())
    still.steps[1].tokens, still.steps[1].origins, still.steps[1].accepted = [6], ["accepted"], [0]
    assert [c["state"] for c in jacobi.cells(still, 1)] == ["committed", "stable", "changed"]
    assert jacobi.committed_per_forward(t) == {1: 1, 3: 1}


def test_convergence_grid_figure_draws_each_iteration_on_its_positions():
    t = jacobi_trace()
    fig = jacobi.grid_figure(t, 1)
    z = fig.data[0].z
    assert list(fig.data[0].x) == [0, 1, 2, 3] and list(fig.data[0].y) == [1, 2]
    assert z[0][3] is None and z[1][0] is None  # no guess there in that iteration
    assert [d.name for d in fig.data[1:]] == ["changed", "stable", "committed"]
    json.loads(fig.to_json())
    json.loads(jacobi.committed_figure(t, 1).to_json())


def lookahead_trace() -> Trace:
    """W = 2, N = 3, G = 2 after prompt [0, 1, 2]. Step 0 finds nothing for 2 and pools (2: 6 8)
    and (5: 7 9); step 1's pending token 5 finds (7 9): 7 is accepted, 9 rejected."""
    def window(n):  # what Lookahead._window gives for W = 2, N = 3 after n candidate nodes
        return {"window_pos": [1, 1, 2], "window_sees": [[0, 1 + n], [0, 2 + n], [0, 1 + n, 3 + n]]}

    steps = [
        Step(0, 3, [], [], [5], ["target"], verified=6,
             extras={"levels": [[2, 5], [6, 7]], "candidates": [], "added": [[2, 6, 8], [5, 7, 9]], **window(0)}),
        Step(1, 4, [Node(7, -1, 1, status="accepted"), Node(9, 0, 2, status="rejected")], [0], [7, 3],
             ["accepted", "resampled"], verified=6,
             extras={"levels": [[5, 6], [8, 4]], "candidates": [[7, 9]], "added": [[5, 8, 1], [6, 4, 2]], **window(2)}),
    ]
    text = {str(i): f"t{i}" for i in range(10)}
    return Trace("lookahead", {"window": 2, "ngram": 3, "candidates": 2}, "m", "Hi", [0, 1, 2], {"temperature": 0.0},
                 8, steps, text)


def test_pool_is_rebuilt_by_replaying_the_added_ngrams():
    t = lookahead_trace()
    assert lookahead.pool_before(t, 0) == {}
    assert lookahead.pool_before(t, 1) == {5: [[7, 9]], 2: [[6, 8]]}  # latest update first
    assert lookahead.pool_before(t, 2) == {6: [[4, 2]], 5: [[8, 1], [7, 9]], 2: [[6, 8]]}  # newest first, at most G
    assert lookahead.winner(t, 1) == (0, 1) and lookahead.winner(t, 0) == (None, 0)
    html = lookahead.pool_html(t, 1)
    assert "2 keys, 2 n-grams" in html and "#fff3bf" in html and "nothing to verify" not in html
    assert "nothing to verify" in lookahead.pool_html(t, 0)


def test_window_figure_has_n_rows_of_w_tokens_and_outlines_each_ngram():
    t = lookahead_trace()
    fig = lookahead.window_figure(t, 1)
    assert [list(r) for r in fig.data[0].text] == [["t5", "t6"], ["t8", "t4"], ["t1", "t2"]]
    assert len(fig.layout.shapes) == 2 and lookahead.window_cells(t.steps[1].extras) == [(0, 1, 6), (1, 0, 8), (1, 1, 4)]
    json.loads(fig.to_json())


def test_combined_mask_has_the_window_rows_and_labels_both_branches():
    t = lookahead_trace()
    z, rows, cols = mask_matrix(t, 1)
    want = tree.mask_rows([-1, 0], t.steps[1].extras["window_sees"])
    assert [r[1:] for r in z] == [[ALLOWED if ok else BLOCKED for ok in row] for row in want]
    assert len(rows) == 6 and rows[3].startswith("L0c1") and rows[5].startswith("L1c1")
    assert z[3][2] == z[3][3] == BLOCKED and z[1][4] == BLOCKED  # window and candidates never see each other
    fig = mask_figure(t, 1, 0)
    assert [a.text.split("<br>")[0] for a in fig.layout.annotations] == ["◀ verification branch:", "lookahead branch ▶"]
    assert "one Jacobi trajectory" in fig.data[0].hovertext[5][0]
    assert not mask_figure(make_trace(), 2).layout.annotations  # no window: the plain draft mask
