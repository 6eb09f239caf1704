"""The draft block of the verify pass's attention mask, the context collapsed into one band.
With a Lookahead window the block is the combined mask: the verification branch (candidate
n-grams) and the lookahead branch (the window's trajectories), which never see each other."""
from __future__ import annotations

import plotly.graph_objects as go

from ..core import tree
from ..traces.trace import Trace
from .lookahead import window, window_cells
from .style import COLORS, N_, layout
from .tokens import label
from .tree import pending_token

ALLOWED, BLOCKED, CONTEXT = 1, 0, 2
CELL_MARKS = {ALLOWED: "✓", BLOCKED: "", CONTEXT: "✓"}  # every row sees the whole context
MARKED_ROWS = 8  # rows of a mask whose cells take a ✓: a larger one's cells are too small for it (colour, hover)
# Rows whose ticks also name their token: more, and a presenter's 16-px labels overlap in a third of a 1024-px
# screen (the hover still names every row's token).
NAMED_ROWS = 12


def mask_matrix(trace: Trace, i: int) -> tuple[list[list[int]], list[str], list[str]]:
    """Rows: pending token, each node, each window token. Columns: the context band, then the same."""
    step = trace.steps[i]
    parents = [n.parent for n in step.nodes]
    rows = tree.mask_rows(parents, window(step).window_sees)
    z = [[CONTEXT] + [ALLOWED if ok else BLOCKED for ok in row] for row in rows]
    names = [f"P {label(trace.text_of(pending_token(trace, i)))}"]
    names += [f"{j} {label(trace.text_of(n.token))}" for j, n in enumerate(step.nodes)]
    names += [f"L{lv}c{c} {label(trace.text_of(tok))}" for lv, c, tok in window_cells(step)]
    cols = [N_("context ({n} tokens)").format(n=step.context_len - 1)] + names
    return z, names, cols


def why(trace: Trace, i: int) -> list[str]:
    """Per row: what it sees and why, with its position offset (people misread this mask)."""
    step = trace.steps[i]
    out = ["pending token P (+0): the context and itself"]
    out += [f"candidate node {j} (+{n.depth}): the context, P and its own prefix in the candidate tree, "
            "so each n-gram is checked as if run alone" for j, n in enumerate(step.nodes)]
    pos = window(step).window_pos
    out += [f"window level {lv}, column {c} (+{p}): P, level 0 up to column {c} and column {c} of the levels "
            "above: one Jacobi trajectory of consecutive positions; never a candidate"
            for (lv, c, _), p in zip(window_cells(step), pos)]
    return out


def mask_figure(trace: Trace, i: int, selected: int | None = None, height: int = 300) -> go.Figure:
    return go.Figure(mask_spec(trace, i, selected, height))


def mask_spec(trace: Trace, i: int, selected: int | None = None, height: int = 300) -> dict:
    """Step i's mask as plain plotly JSON (the player's frame; mask_figure wraps it for a page)."""
    z, rows, cols = mask_matrix(trace, i)
    colorscale = [[0, "#f4f4f4"], [0.5, COLORS["accepted"]], [1, "#9ecae1"]]
    hover = [[f"row {r} attends to {c}: {'yes' if v else 'no'}<br>{w}" for c, v in zip(cols, zrow)]
             for r, zrow, w in zip(rows, z, why(trace, i))]
    heatmap = dict(type="heatmap", z=z, x=list(range(len(cols))), y=list(range(len(rows))), zmin=0, zmax=2,
                   colorscale=colorscale, showscale=False, xgap=2, ygap=2, hovertext=hover, hoverinfo="text",
                   textfont=dict(color="white", size=12))
    window = len(rows) > len(trace.steps[i].nodes) + 1  # a combined mask: its branches are outlined and named
    if not window and len(rows) <= MARKED_ROWS:  # a mark as well as a colour: ✓ where a row may look
        heatmap.update(text=[[CELL_MARKS[v] for v in zrow] for zrow in z], texttemplate="%{text}")
    fig = {"data": [heatmap], "layout": dict(  # a combined mask's many columns: labels upright
        xaxis=dict(tickvals=list(range(len(cols))), ticktext=cols, side="top", tickangle=-90 if window else -45),
        yaxis=dict(tickvals=list(range(len(rows))), ticktext=rows, autorange="reversed"))}
    if selected is not None:
        r = selected + 1  # row/column of node j is j+1 in the block, +1 more column for the band
        for x0, x1, y0, y1 in ((-0.5, len(cols) - 0.5, r - 0.5, r + 0.5), (r + 0.5, r + 1.5, -0.5, len(rows) - 0.5)):
            fig["layout"].setdefault("shapes", []).append(dict(type="rect", x0=x0, x1=x1, y0=y0, y1=y1,
                                                line=dict(color="black", width=3)))
    if window:
        _label_branches(fig["layout"], len(trace.steps[i].nodes), len(rows))
        height = max(height, 26 * len(rows) + 130)  # a row per window token: keep the rows readable
    elif len(rows) > NAMED_ROWS:  # e.g. EAGLE's tree with a copied branch: the ticks name positions only
        for axis, names in (("xaxis", cols), ("yaxis", rows)):
            fig["layout"][axis]["ticktext"] = [n if n.startswith("context") else n.split(" ")[0] for n in names]
        fig["layout"]["xaxis"]["tickangle"] = 0  # short numbers: level (slanted, they ran into each other)
        height = max(height, 20 * len(rows) + 110)
    return layout(fig, height=height)


def _label_branches(lay: dict, n_nodes: int, n_rows: int) -> None:
    """Outline the two diagonal blocks of the combined mask; name each one in the blocked
    off-diagonal area beside it (the branches never see each other, so nothing is hidden)."""
    note = dict(showarrow=False, bgcolor="rgba(255,255,255,0.85)")
    lay.setdefault("shapes", [])
    lay.setdefault("annotations", [])
    if n_nodes:  # block rows 1..n_nodes sit at y = 1..n_nodes and x = 2..n_nodes+1 (x = 0: the context band)
        lay["shapes"].append(dict(type="rect", x0=1.5, x1=n_nodes + 1.5, y0=0.5, y1=n_nodes + 0.5,
                                  line=dict(color="#1f77b4", width=2, dash="dash")))
        lay["annotations"].append(dict(note, x=n_nodes + 1.7, y=(n_nodes + 1) / 2, xanchor="left",
                                       text=N_("◀ verification branch:<br>P + own prefix"),
                                       font=dict(color="#1f77b4", size=11)))
    a = n_nodes + 1
    lay["shapes"].append(dict(type="rect", x0=a + 0.5, x1=n_rows + 0.5, y0=a - 0.5, y1=n_rows - 0.5,
                              line=dict(color="#9467bd", width=2, dash="dash")))
    text, font = "lookahead branch ▶<br>one trajectory per column", dict(color="#9467bd", size=11)
    if n_nodes:
        lay["annotations"].append(dict(note, x=a + 0.3, y=(a + n_rows - 1) / 2, text=text, xanchor="right", font=font))
    else:
        lay["annotations"].append(dict(note, x=n_rows + 0.5, y=a - 0.5, text=text.replace("<br>", ": "),
                                       xanchor="right", yanchor="bottom", font=font))
