"""The pure figure builders (paradec.plots) on a hand-made trace: no torch, no streamlit."""
import re
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from paradec.core import records, tree
from paradec.core.steps import Node, Step
from paradec.costs.speccost import chain_tau
from paradec.plots import arena, jacobi, kpis, lookahead, microscope
from paradec.plots.mask import ALLOWED, BLOCKED, CONTEXT, mask_figure, mask_matrix
from paradec.plots.style import COLORS
from paradec.plots.tokens import label, stream_html
from paradec.plots.tree import FINAL, GLYPHS, KIND_NAMES, ROOT, SYMBOLS, graph, legend, positions, short, tree_figure
from paradec.traces.trace import Trace

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
    return Trace("sps", {"k": 3}, "m", "Hi", [0, 1, 2],
                 {"temperature": temperature, "top_p": 1.0, "top_k": 0, "seed": 0}, 8, steps, text, wall_s=0.1)


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


# Per step of make_trace(), written out by hand: the pending token (root), the target's token and
# its origin (the last marker), the edges of the accepted path (green) and the other edges (grey).
TREE = {
    0: (2, 7, "target", {(ROOT, FINAL)}, set()),
    1: (7, 7, "resampled", {(ROOT, 0), (0, FINAL)}, {(0, 1), (1, 2)}),
    2: (7, 6, "bonus", {(ROOT, 1), (1, 2), (2, FINAL)}, {(ROOT, 0)}),
}
PARENTS = {0: [], 1: [-1, 0, 1], 2: [-1, -1, 1]}  # each step's node parents in make_trace()


def colour_at(trace, z):
    """The colour a heatmap trace paints value z: on a stop, or inside a one-colour band of a stepped scale."""
    v = (z - trace.zmin) / (trace.zmax - trace.zmin)
    scale = trace.colorscale
    on_stop = [c for s, c in scale if s == v]
    return on_stop[0] if on_stop else next(c for (a, c), (b, d) in pairwise(scale) if a < v < b and c == d)


def tree_marks(fig):
    """The tree's trace of nodes (the edges are lines; the legend's entries mark nothing)."""
    return next(d for d in fig.data if d.mode == "markers+text")


def tree_vertices(fig) -> list:
    """The vertex of each marker: the node index, or ROOT / FINAL told apart by their symbols."""
    marks = tree_marks(fig)
    return [{"square": ROOT, "diamond": FINAL}.get(s, v) for s, v in zip(marks.marker.symbol, marks.customdata)]


@pytest.mark.parametrize("i", [0, 1, 2])
def test_tree_figure_shows_every_token_the_accepted_path_and_the_selected_node(i):
    t = make_trace()
    pending, final, origin, hot, cold = TREE[i]
    selected = len(PARENTS[i]) - 1 if PARENTS[i] else None  # the last node: a figure marking node 0 fails
    fig = tree_figure(t, i, selected)
    marks, verts = tree_marks(fig), tree_vertices(fig)
    want = {ROOT: (pending, COLORS["pending"]), FINAL: (final, COLORS[origin])}
    want |= {j: (n.token, COLORS[n.status]) for j, n in enumerate(t.steps[i].nodes)}
    assert len(verts) == len(want)
    assert dict(zip(verts, zip(marks.text, marks.marker.color))) == {
        v: (short(label(t.text_of(tok))), colour) for v, (tok, colour) in want.items()}
    big = [v for v, size in zip(verts, marks.marker.size) if size > min(marks.marker.size)]
    outlined = [v for v, c in zip(verts, marks.marker.line.color) if c == "black"]
    assert big == outlined == ([] if selected is None else [selected])
    at = {(x, y): v for v, x, y in zip(verts, marks.x, marks.y)}
    edges = {(at[e.x[k], e.y[k]], at[e.x[k + 1], e.y[k + 1]]): e.line.color  # segments, None between them
             for e in fig.data if e.mode == "lines" for k in range(0, len(e.x), 3)}
    assert set(edges) == hot | cold
    assert {e for e, colour in edges.items() if colour == COLORS["accepted"]} == hot
    # not colour alone: each kind of node has its own symbol, and the legend names every kind drawn
    kinds = {SYMBOLS[k]: k for k in {"pending", origin, *(n.status for n in t.steps[i].nodes)}}
    assert set(marks.marker.symbol) <= set(kinds)  # the legend (the panel's caption) names each symbol
    assert all(f"{GLYPHS[SYMBOLS[k]]} {KIND_NAMES[k]}" in legend() for k in ("pending", "accepted", "rejected",
                                                                          "unreached", "target"))


@pytest.mark.parametrize("i", [0, 1, 2])
def test_mask_figure_paints_the_library_mask_and_outlines_the_selected_node(i):
    t = make_trace()
    selected = 1 if PARENTS[i] else None
    fig = mask_figure(t, i, selected)
    heat = fig.data[0]
    allowed = tree.mask_rows(PARENTS[i])
    assert [list(r) for r in heat.z] == [[CONTEXT] + [ALLOWED if ok else BLOCKED for ok in row] for row in allowed]
    assert (colour_at(heat, ALLOWED), colour_at(heat, CONTEXT)) == (COLORS["accepted"], "#9ecae1")
    assert colour_at(heat, BLOCKED) not in (COLORS["accepted"], "#9ecae1")
    names = [f"P {label(t.text_of(TREE[i][0]))}"] + [f"{j} {label(t.text_of(n.token))}"
                                                     for j, n in enumerate(t.steps[i].nodes)]
    assert list(fig.layout.yaxis.ticktext) == names
    assert list(fig.layout.xaxis.ticktext) == [f"context ({t.steps[i].context_len - 1} tokens)"] + names
    # node j is row j + 1 and column j + 2 (after the pending token and the context band)
    rows = {(s.y0 + s.y1) / 2 for s in fig.layout.shapes if s.x1 - s.x0 > 1}
    cols = {(s.x0 + s.x1) / 2 for s in fig.layout.shapes if s.y1 - s.y0 > 1}
    assert (rows, cols) == (({selected + 1}, {selected + 2}) if PARENTS[i] else (set(), set()))


@pytest.mark.parametrize("i", [0, 1, 2])
def test_kpi_figures_stack_each_steps_tokens_and_times_and_mark_the_current_step(i):
    t = make_trace()
    tokens, time = kpis.tokens_figure(t, i), kpis.time_figure(t, i)
    accepted, own, tau = tokens.data
    assert list(accepted.x) == list(own.x) == list(tau.x) == [1, 2, 3]
    assert list(accepted.y) == [0, 1, 2] and list(own.y) == [1, 1, 1]  # the target adds one token a step
    assert list(tau.y) == pytest.approx([1 / 1, 3 / 2, 6 / 3])  # tokens so far / target forwards so far
    draft, verify = time.data
    assert list(draft.y) == [0.0, 9.0, 5.0] and list(verify.y) == [20.0, 11.0, 12.0]
    for fig in (tokens, time):
        assert fig.layout.barmode == "stack" and [s.x0 for s in fig.layout.shapes] == [i + 1]


def test_position_figure_shows_the_acceptance_per_depth():
    # depth 1 tested in steps 1 and 2, accepted in both; depth 2 tested in both (step 1 rejected node 1), accepted
    # in step 2; depth 3 drafted once, under the rejected node 1: never tested, so no bar
    bars = kpis.position_figure(make_trace()).data[0]
    assert list(bars.x) == [1, 2] and list(bars.y) == [1.0, 0.5] and list(bars.text) == ["2/2", "1/2"]


def test_mask_matrix_is_the_library_mask_with_a_context_band():
    t = make_trace()
    z, rows, cols = mask_matrix(t, 2)
    want = tree.mask_rows([-1, -1, 1])
    assert [r[1:] for r in z] == [[ALLOWED if ok else BLOCKED for ok in row] for row in want]
    assert all(r[0] == CONTEXT for r in z)
    assert cols[0] == "context (5 tokens)" and len(rows) == 4


def test_stream_colours_each_origin_and_escapes_html():
    t = make_trace()
    t.token_text["5"] = "<b>"
    html = stream_html(t, 2)
    assert "&lt;b&gt;" in html and "<b>" not in html  # a token's text never becomes markup
    struck = re.compile(r'class="pd-tok"[^>]*line-through')  # a token struck through (the legend shows the line too)
    now = stream_html(t, 1)
    assert len(struck.findall(now)) == 1 and "min(1,p/q)=0.500" in now  # this step's rejected draft
    assert not struck.findall(html)  # past steps' rejected drafts stay out: the stream stays readable
    assert not struck.findall(stream_html(t, 1, show_rejected=False))
    assert 'tabindex="0"' in now and "data-tip=" in now  # each token's details on focus (a tab, a tap) too
    legend = stream_html(t, 1, words={"accepted": "brouillon accepté"})
    assert "brouillon accepté" in legend and "accepted draft" not in legend  # the app's words, in its language


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


def test_pq_figure_pairs_p_and_q_on_each_token_the_drafted_one_first():
    t = make_trace()
    p, q = microscope.pq_figure(t, t.steps[1].nodes[1]).data  # drafted " sat": p = 0.3, q = 0.6
    assert list(p.x) == list(q.x) == ["·sat", "·cat", "·on", "<b>", "·x"]  # then P_TOP's tokens, then Q_TOP's
    assert list(p.y) == [0.3, 0.5, 0.1, 0.05, None] and list(q.y) == [0.6, 0.2, 0.05, None, 0.1]  # None: not in top-k
    outside = microscope.pq_figure(t, t.steps[2].nodes[0])  # drafted "<b>", outside Q_TOP: its own q = 0.3
    assert outside.data[1].x[0] == "<b>" and outside.data[1].y[0] == 0.3
    assert [(a.text, a.x) for a in outside.layout.annotations] == [("drafted", "<b>")]


def test_accept_figure_shows_min_1_p_over_q_against_u():
    accepted, rejected = make_trace().steps[1].nodes[:2]
    for node, ratio in ((rejected, 0.3 / 0.6), (accepted, 1.0)):  # p/q = 2.5 for the accepted one: capped at 1
        fig = microscope.accept_figure(node)
        bar, u = fig.data
        assert bar.y[0] == pytest.approx(ratio) and u.y[0] == node.u and u.text[0] == f"u = {node.u:.3f}"
        assert fig.layout.title.text.endswith(node.status)
        assert u.textposition == ("top center" if node.u <= 0.7 else "bottom center")  # inside the plot's width


def test_residual_figure_shows_the_residual_top_list():
    t = make_trace()
    bars = microscope.residual_figure(t, t.steps[1].residual_top).data[0]
    assert list(bars.x) == ["·on", "<b>"] and list(bars.y) == [0.8, 0.2]


def test_histogram_counts_every_draw_beside_p_and_q():
    t = make_trace()
    node = t.steps[1].nodes[1]
    fig = microscope.histogram_figure(t, node, 500)
    draws, p, q = fig.data
    # tokens in both top-k lists (" cat", " sat", " on"), then the rest of each distribution
    assert list(draws.x) == list(p.x) == list(q.x) == ["·cat", "·sat", "·on", microscope.OTHER]
    assert list(p.y) == pytest.approx([0.5, 0.3, 0.1, 0.1]) and list(q.y) == pytest.approx([0.2, 0.6, 0.05, 0.15])
    counts, kept = microscope.simulate(*microscope.buckets(node)[1:], n=500, seed=0)
    assert np.array(draws.y) * 500 == pytest.approx(counts) and counts.sum() == 500
    assert f"{kept:.0%} kept the draft" in fig.layout.title.text.replace("<br>", " ")


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


def test_arena_histogram_and_bars_show_their_inputs():
    hist = arena.length_histogram({"ar": make_trace(), "jacobi": jacobi_trace()})
    assert [(h.name, list(h.x)) for h in hist.data] == [("ar", [1, 2, 3]), ("jacobi", [1, 3])]  # tokens a step
    assert hist.data[0].marker.color != hist.data[1].marker.color
    fig = arena.bars_figure({"ar": 1.0, "sps": 2.5}, "τ")
    bars = fig.data[0]
    assert list(bars.y) == ["ar", "sps"] and list(bars.x) == [1.0, 2.5] and list(bars.text) == ["1.00", "2.50"]
    assert len(set(bars.marker.color)) == 2 and fig.layout.title.text == "τ"


def test_cost_figure_draws_every_repeat_and_each_forwards_median():
    cost = {"model": "m", "device": "cpu", "tokens": [1, 8], "threads": 2, "curves": {
        "paradec": {"median_ms": [20.0, 24.0], "all_ms": [[19.0, 20.0, 21.0], [23.0, 24.0, 25.0]]},
        "Hugging Face": {"median_ms": [40.0, 64.0], "all_ms": [[39.0, 40.0, 41.0], [60.0, 64.0, 70.0]]}}}
    fig = kpis.cost_figure(cost)
    lines = [d for d in fig.data if d.mode == "lines+markers+text"]
    assert [d.name for d in lines] == ["paradec", "Hugging Face"] and len(fig.data) == 6
    assert list(lines[0].y) == [20.0, 24.0] and list(lines[1].text) == ["", "1.60×"]  # 1.00x by definition: unsaid
    dots = [d for d in fig.data if d.mode == "markers"]
    assert [list(d.y) for d in dots[:2]] == [[19.0, 20.0, 21.0], [23.0, 24.0, 25.0]]


def test_cost_figure_labels_only_sizes_far_enough_apart_to_read():
    curve = {"median_ms": [20.0, 22.0, 23.0, 26.0], "all_ms": [[20.0], [22.0], [23.0], [26.0]]}
    fig = kpis.cost_figure({"model": "m", "device": "cpu", "tokens": [1, 12, 13, 16], "curves": {"paradec": curve}})
    [line] = [d for d in fig.data if d.mode == "lines+markers+text"]
    assert list(line.text) == ["", "", "", "1.30×"]  # 12 and 13 sit close to 16 on a log axis; 1 is 1.00x
    assert list(line.customdata) == ["1.00×", "1.10×", "1.15×", "1.30×"]  # hover gives every one
    assert list(fig.layout.xaxis.tickvals) == [1, 16]


def jacobi_trace() -> Trace:
    """Block of 3 after prompt [0, 1, 2]. Iteration 1: no guess is right, the target commits 7.
    Iteration 2 (positions 1..3): guesses 6, 5 are fixed points, guess 9 is not: 6, 5 and the
    target's 8 are committed. Guess 5 at position 2 did not change since iteration 1."""
    chain = lambda toks, statuses: [Node(t, k - 1, k + 1, status=s) for k, (t, s) in enumerate(zip(toks, statuses))]
    steps = [
        Step(0, 3, chain([5, 5, 5], ["rejected", "unreached", "unreached"]), [], [7], ["resampled"], verified=6,
             record=records.Jacobi(block=[5, 5, 5], changed=[True, True, True])),
        Step(1, 4, chain([6, 5, 9], ["accepted", "accepted", "rejected"]), [0, 1], [6, 5, 8],
             ["accepted", "accepted", "resampled"], verified=4,
             record=records.Jacobi(block=[6, 5, 9], changed=[True, False, True])),
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
    assert [d.name for d in fig.data[1:]] == ["changed", "stable", "committed"]
    # None: no guess there in that iteration. Iteration 1: the target's 7 committed, guesses 5 and 5
    # changed; iteration 2: 6, 5 and the target's 8 committed.
    states = [["committed", "changed", "changed", None], [None, "committed", "committed", "committed"]]
    legend = {d.name: d.marker.color for d in fig.data[1:]}
    painted = [[None if v is None else colour_at(fig.data[0], v) for v in row] for row in z]
    assert painted == [[None if st is None else legend[st] for st in row] for row in states]
    assert len(set(legend.values())) == 3
    assert [list(r) for r in fig.data[0].text] == [["t7", "t5", "t5", ""], ["", "t6", "t5", "t8"]]
    [now] = fig.layout.shapes  # the current iteration (2) outlined over its positions 1..3
    assert (now.x0, now.x1, now.y0, now.y1) == (0.5, 3.5, 1.5, 2.5)


def test_committed_figure_counts_iterations_and_highlights_the_current_one():
    fig = jacobi.committed_figure(jacobi_trace(), 1)
    bars = fig.data[0]
    assert list(bars.x) == [1, 3] and list(bars.y) == [1, 1]  # one iteration committed 1 token, one 3
    assert list(bars.marker.color) == ["#9ecae1", COLORS["accepted"]]  # iteration 2 committed 3
    assert fig.layout.title.text == "τ = 2.00 · this pass: 3"


def lookahead_trace() -> Trace:
    """W = 2, N = 3, G = 2 after prompt [0, 1, 2]. Step 0 finds nothing for 2 and pools (2: 6 8)
    and (5: 7 9); step 1's pending token 5 finds (7 9): 7 is accepted, 9 rejected."""
    def window(n):  # what Lookahead._window gives for W = 2, N = 3 after n candidate nodes
        return {"window_pos": [1, 1, 2], "window_sees": [[0, 1 + n], [0, 2 + n], [0, 1 + n, 3 + n]]}

    steps = [
        Step(0, 3, [], [], [5], ["target"], verified=6,
             record=records.Lookahead([[2, 5], [6, 7]], [], added=[[2, 6, 8], [5, 7, 9]], **window(0))),
        Step(1, 4, [Node(7, -1, 1, status="accepted"), Node(9, 0, 2, status="rejected")], [0], [7, 3],
             ["accepted", "resampled"], verified=6,
             record=records.Lookahead([[5, 6], [8, 4]], [[7, 9]], added=[[5, 8, 1], [6, 4, 2]], **window(2))),
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
    assert lookahead.window_cells(t.steps[1]) == [(0, 1, 6), (1, 0, 8), (1, 1, 4)]
    assert list(fig.layout.yaxis.ticktext) == ["level 0", "level 1", "prediction"]
    shade = [list(r) for r in fig.data[0].z]
    assert shade[0][0] > shade[2][0] > shade[0][1] == shade[1][0]  # pending token, predictions, guesses
    # each column (the n-grams 5 8 1 and 6 4 2, both new to the pool) outlined solid from level 0 to the prediction
    assert [((s.x0 + s.x1) / 2, s.y0 < 0 and s.y1 > 2, s.line.dash) for s in fig.layout.shapes] == [
        (0, True, "solid"), (1, True, "solid")]
    seen = Trace.from_dict(t.to_dict())
    first = seen.steps[0].record
    seen.steps[0].record = replace(first, added=first.added + [[5, 8, 1]])  # column 0's n-gram was pooled: dotted
    assert [s.line.dash for s in lookahead.window_figure(seen, 1).layout.shapes] == ["dot", "solid"]


def test_combined_mask_has_the_window_rows_and_labels_both_branches():
    t = lookahead_trace()
    z, rows, cols = mask_matrix(t, 1)
    want = tree.mask_rows([-1, 0], t.steps[1].record.window_sees)
    assert [r[1:] for r in z] == [[ALLOWED if ok else BLOCKED for ok in row] for row in want]
    assert len(rows) == 6 and rows[3].startswith("L0c1") and rows[5].startswith("L1c1")
    assert z[3][2] == z[3][3] == BLOCKED and z[1][4] == BLOCKED  # window and candidates never see each other
    fig = mask_figure(t, 1, 0)
    branches = [a.text.split("<br>")[0] for a in fig.layout.annotations]
    assert branches == ["◀ verification branch:", "lookahead branch ▶"]
    assert fig.data[0].text is None  # no ✓ in a combined mask's cells: its branches are outlined and named
    assert "one Jacobi trajectory" in fig.data[0].hovertext[5][0]
    plain = mask_figure(make_trace(), 2)  # no window: the plain draft mask, a ✓ in each cell a row may look at
    assert not plain.layout.annotations and {c for row in plain.data[0].text for c in row} == {"✓", ""}


def test_jacobi_commits_the_first_position_of_every_pass_and_later_ones_less_often():
    from paradec.plots.jacobi import position_figure

    trace = Trace.load(Path(__file__).resolve().parents[1] / "assets" / "traces" / "jacobi-greedy.json")
    share = list(position_figure(trace).data[0].y)
    assert share[0] == 1.0 and share == sorted(share, reverse=True) and share[-1] < 1.0
    assert len(share) == max(len(s.tokens) for s in trace.steps)
