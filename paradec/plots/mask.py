"""The draft block of the verify pass's attention mask, the context collapsed into one band."""
from __future__ import annotations

import plotly.graph_objects as go

from .. import tree
from ..trace import Trace
from .style import COLORS, layout
from .tokens import label
from .tree import pending_token

ALLOWED, BLOCKED, CONTEXT = 1, 0, 2


def mask_matrix(trace: Trace, i: int) -> tuple[list[list[int]], list[str], list[str]]:
    """Rows: pending token then each node. Columns: the context band, the pending token, each node."""
    step = trace.steps[i]
    parents = [n.parent for n in step.nodes]
    rows = tree.mask_rows(parents)
    z = [[CONTEXT] + [ALLOWED if ok else BLOCKED for ok in row] for row in rows]
    names = [f"P {label(trace.text_of(pending_token(trace, i)))}"]
    names += [f"{j} {label(trace.text_of(n.token))}" for j, n in enumerate(step.nodes)]
    cols = [f"context ({step.context_len - 1} tokens)"] + names
    return z, names, cols


def mask_figure(trace: Trace, i: int, selected: int | None = None, height: int = 300) -> go.Figure:
    z, rows, cols = mask_matrix(trace, i)
    colorscale = [[0, "#f4f4f4"], [0.5, COLORS["accepted"]], [1, "#9ecae1"]]
    hover = [[f"row {r} attends to {c}: {'yes' if v else 'no'}" for c, v in zip(cols, zrow)] for r, zrow in zip(rows, z)]
    fig = go.Figure(go.Heatmap(
        z=z, x=list(range(len(cols))), y=list(range(len(rows))), zmin=0, zmax=2, colorscale=colorscale,
        showscale=False, xgap=2, ygap=2, hovertext=hover, hoverinfo="text",
    ))
    if selected is not None:
        r = selected + 1  # row/column of node j is j+1 in the block, +1 more column for the band
        for x0, x1, y0, y1 in ((-0.5, len(cols) - 0.5, r - 0.5, r + 0.5), (r + 0.5, r + 1.5, -0.5, len(rows) - 0.5)):
            fig.add_shape(type="rect", x0=x0, x1=x1, y0=y0, y1=y1, line=dict(color="black", width=3))
    fig.update_xaxes(tickvals=list(range(len(cols))), ticktext=cols, side="top", tickangle=-45)
    fig.update_yaxes(tickvals=list(range(len(rows))), ticktext=rows, autorange="reversed")
    return layout(fig, height=height)
