"""Medusa's own views of a trace: the heads' top-k grid the tree was built from, each node's
path (head position x top-k rank) linked to its mask row, the path that won, and how
often each head's guess was accepted.

A Medusa step's record (paradec.core.records.Medusa) holds, per node, its top-k rank and head
probability, and per head its top-k tokens with probabilities (head_top); a node's depth
is the head that guessed it (head d predicts the token d places after the pending one)."""
from __future__ import annotations

import plotly.graph_objects as go

from ..core import tree
from ..traces.trace import Trace
from .style import COLORS, MIN_TEXT, N_, cell_chars, layout
from .tokens import label


def node_paths(trace: Trace, i: int) -> list[list[int]]:
    """Each node's path in medusa_choices notation: the top-k rank at every depth."""
    s = trace.steps[i]
    ranks, parents = s.record.rank, [n.parent for n in s.nodes]
    return [[ranks[a] for a in tree.ancestors(parents, j)] for j in range(len(ranks))]


def node_rows(trace: Trace, i: int) -> list[dict]:
    """One row per node: node index, mask row, head (depth), rank, path, token, head
    probability, target probability and fate. Mask row 0 is the pending token."""
    s = trace.steps[i]
    paths, head_p = node_paths(trace, i), s.record.head_p
    return [{"node": j, "mask row": j + 1, "head": n.depth, "rank": paths[j][-1], "path": str(paths[j]),
             "token": label(trace.text_of(n.token)), "head p": head_p[j] if j < len(head_p) else None,
             "target p": n.p, "status": n.status} for j, n in enumerate(s.nodes)]


def winner(trace: Trace, i: int) -> list[int]:
    """The accepted path in medusa_choices notation ([] when no guess was accepted)."""
    s = trace.steps[i]
    return node_paths(trace, i)[s.accepted[-1]] if s.accepted else []


def head_acceptance(trace: Trace) -> list[dict]:
    """Per head d over the steps whose tree reached depth d (a draft-length rule may keep fewer):
    how often its guess was accepted (the path reached depth d), and how often given that head
    d-1's was (the chance to go one deeper)."""
    drafted = [(s, max(n.depth for n in s.nodes)) for s in trace.steps if s.nodes]
    out = []
    for d in range(1, max((top for _, top in drafted), default=0) + 1):
        steps = [s for s, top in drafted if top >= d]
        reached = sum(len(s.accepted) >= d - 1 for s in steps)
        won = sum(len(s.accepted) >= d for s in steps)
        out.append({"head": d, "accepted": won, "steps": len(steps), "rate": won / max(1, len(steps)),
                    "given_previous": won / max(1, reached)})
    return out


def heads_figure(trace: Trace, i: int, height: int = 280) -> go.Figure:
    """Rows = heads, columns = top-k ranks; a cell is that head's rank-r token and its
    probability. Cells the tree used are outlined, the winning path's cells in green."""
    s = trace.steps[i]
    top = s.record.head_top
    used = {(n.depth, r) for n, r in zip(s.nodes, s.record.rank)}
    won = {(d + 1, r) for d, r in enumerate(winner(trace, i))}
    z = [[p for _, p in row] for row in top]
    chars = cell_chars(len(top[0]) if top else 1)  # a wide top-k's cells are narrow: hover shows the rest
    text = [[label(trace.text_of(t))[:chars] for t, _ in row] for row in top]

    def place(cell):  # where a (head, rank) cell stands in this step's tree
        return "on the winning path" if cell in won else "in the tree" if cell in used else "not in the tree"

    hover = [[f"head {d + 1}, rank {r}: {label(trace.text_of(t))} (id {t})<br>head probability {p:.3f}<br>"
              f"{place((d + 1, r))}"
              for r, (t, p) in enumerate(row)] for d, row in enumerate(top)]
    fig = go.Figure(go.Heatmap(z=z, text=text, texttemplate="%{text}", hovertext=hover, hoverinfo="text",
                               colorscale="Blues", zmin=0, zmax=1, showscale=False, xgap=2, ygap=2,
                               textfont=dict(size=MIN_TEXT)))  # a fixed size: plotly would shrink it to fit the cell
    for d, r in used:
        fig.add_shape(type="rect", x0=r - 0.5, x1=r + 0.5, y0=d - 1.5, y1=d - 0.5,
                      line=dict(color=COLORS["accepted"] if (d, r) in won else "#444444",
                                width=4 if (d, r) in won else 1.5))
    fig.update_xaxes(title=N_("top-k rank"), tickvals=list(range(len(z[0]) if z else 0)), side="top")
    fig.update_yaxes(title=N_("head"), tickvals=list(range(len(z))), autorange="reversed",
                     ticktext=[N_("head {n}").format(n=d + 1) for d in range(len(z))])
    return layout(fig, None, max(height, 48 * len(z) + 90))


def head_acceptance_figure(trace: Trace, height: int = 240) -> go.Figure:
    rows = head_acceptance(trace)
    heads = [N_("head {n}").format(n=r["head"]) for r in rows]
    fig = go.Figure([
        go.Bar(x=heads, y=[r["rate"] for r in rows], name=N_("accepted (share of steps)"),
               marker_color=COLORS["accepted"]),
        go.Bar(x=heads, y=[r["given_previous"] for r in rows], name=N_("given the head before was"),
               marker_color="#9ecae1"),
    ])
    fig.update_yaxes(range=[0, 1], tickformat=".0%")
    return layout(fig, N_("Per-head acceptance over the run"), height)
