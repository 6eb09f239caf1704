"""Lookahead decoding (Fu et al., 2024) from a trace: the 2D window, the n-gram pool and the
labels of the combined mask.

A step's record (paradec.core.records.Lookahead) holds the window it fed (levels: N-1 lists of W tokens,
levels[0][0] the pending token), the window's position offsets and attention (window_pos,
window_sees), the pool's candidates for the pending token and the W n-grams the pass closed and
added to the pool (added: one per column, read down the column plus the prediction)."""
from __future__ import annotations

import html

import plotly.graph_objects as go

from ..core import records
from ..core.steps import Step
from ..traces.trace import Trace
from .style import COLORS, MIN_TEXT, N_, cell_chars, layout
from .tokens import label
from .tree import pending_token


def window(step: Step) -> records.Lookahead:
    """The step's Lookahead record; for another method's step, an empty window (no window rows)."""
    return step.record if isinstance(step.record, records.Lookahead) else records.Lookahead(levels=[])


def window_cells(step: Step) -> list[tuple[int, int, int]]:
    """(level, column, token) of each window token, in verify-block order: level 0 without its
    column 0 (that is the pending token itself), then the other levels."""
    return [(j, c, tok) for j, level in enumerate(window(step).levels) for c, tok in enumerate(level)
            if (j, c) != (0, 0)]


def pool_before(trace: Trace, i: int) -> dict[int, list[list[int]]]:
    """The pool as step i searched it: the n-grams of steps 0..i-1 replayed in order. Per key
    (first token) the continuations, newest first, at most G (as Lookahead.commit keeps them).
    Keys are ordered by their last update, latest first."""
    keep = max(1, trace.params.get("candidates", 3))
    pool: dict[int, list[list[int]]] = {}
    for s in trace.steps[:i]:
        for gram in s.record.added:
            key, cont = gram[0], gram[1:]
            bucket = [c for c in pool.pop(key, []) if c != cont]
            pool[key] = ([cont] + bucket)[:keep]
    return dict(reversed(pool.items()))


def winner(trace: Trace, i: int) -> tuple[int | None, int]:
    """(index of the candidate the target accepted, how many of its tokens), or (None, 0)."""
    s = trace.steps[i]
    won = [s.nodes[a].token for a in s.accepted]
    for k, cand in enumerate(s.record.candidates):
        if won and cand[: len(won)] == won:
            return k, len(won)
    return None, 0


def _tok(trace: Trace, t: int) -> str:
    return html.escape(label(trace.text_of(t)))


def pool_html(trace: Trace, i: int, max_rows: int = 40) -> str:
    """The pool as a table; the row of the pending token (the key searched) first, its
    candidates numbered, the winner's accepted tokens in green."""
    pool = pool_before(trace, i)
    key = pending_token(trace, i)
    best, n_won = winner(trace, i)
    order = ([key] if key in pool else []) + [k for k in pool if k != key][: max_rows - 1]
    rows = []
    for k in order:
        conts = []
        for c, cont in enumerate(pool[k]):
            toks = [f'<b style="color:{COLORS["accepted"]}">{_tok(trace, t)}</b>'
                    if k == key and c == best and m < n_won
                    else _tok(trace, t) for m, t in enumerate(cont)]
            mark = f"<sup>{c + 1}</sup>" if k == key else ""
            conts.append(f"{mark}{' '.join(toks)}")
        style = "background:#fff3bf;font-weight:600" if k == key else ""
        rows.append(f'<tr style="{style}"><td>{_tok(trace, k)}</td><td>{" &nbsp;|&nbsp; ".join(conts)}</td></tr>')
    if key not in pool:
        rows.insert(0, f'<tr style="background:#fff3bf"><td>{_tok(trace, key)}</td><td><i>no n-gram starts with '
                       f'the pending token: nothing to verify</i></td></tr>')
    grams = sum(len(v) for v in pool.values())
    return (f'<div style="font-size:12px">{len(pool)} keys, {grams} n-grams before this step · searched: '
            f'<b>{_tok(trace, key)}</b></div>'
            '<div style="max-height:230px;overflow-y:auto;border:1px solid #ddd;border-radius:6px">'
            '<table style="font-family:monospace;font-size:13px;border-collapse:collapse;width:100%">'
            '<tr><th align="left">first token</th><th align="left">continuations, newest first</th></tr>'
            f'{"".join(rows)}</table></div>')


def _column_is_new(trace: Trace, i: int) -> list[bool]:
    """Per window column: whether its n-gram was not in the pool yet."""
    pool = pool_before(trace, i)
    return [gram[1:] not in pool.get(gram[0], []) for gram in trace.steps[i].record.added]


def window_figure(trace: Trace, i: int, height: int = 260) -> go.Figure:
    """N rows x W columns: the N-1 levels fed in this pass and the target's predictions after
    the last level. Each column read downwards is one n-gram added to the pool (outlined:
    solid when new to the pool, dotted when it was there already)."""
    rec = trace.steps[i].record
    added = rec.added
    grid = [list(level) for level in rec.levels] + ([[g[-1] for g in added]] if added else [])
    n_levels = len(rec.levels)
    names = [N_("level {j}").format(j=j) for j in range(n_levels)] + ([N_("prediction")] if added else [])
    z = [[0.5 if j == n_levels else 0.0 for _ in row] for j, row in enumerate(grid)]
    z[0][0] = 1.0  # the pending token: committed, not a guess
    chars = cell_chars(len(grid[0]))  # a long window's cells are narrow: what fits, hover shows the rest
    text = [[label(trace.text_of(t))[:chars] for t in row] for row in grid]
    hover = [[f"{names[j]}, column {c}, position +{c + j}: {label(trace.text_of(t))}" for c, t in enumerate(row)]
             for j, row in enumerate(grid)]
    hover[0][0] = f"the pending token {label(trace.text_of(grid[0][0]))}: every trajectory starts from it"
    scale = [[0, "#dbe9f6"], [0.5, "#c7e9c0"], [1, COLORS["pending"]]]
    fig = go.Figure(go.Heatmap(z=z, text=text, texttemplate="%{text}", hovertext=hover, hoverinfo="text",
                               colorscale=scale, zmin=0, zmax=1, showscale=False, xgap=3, ygap=3,
                               textfont=dict(size=MIN_TEXT)))
    for c, new in enumerate(_column_is_new(trace, i)):
        fig.add_shape(type="rect", x0=c - 0.46, x1=c + 0.46, y0=-0.46, y1=len(grid) - 0.54,
                      line=dict(color="black" if new else "#999", width=2, dash="solid" if new else "dot"))
    columns = range(len(grid[0]))
    fig.update_xaxes(tickvals=list(columns), ticktext=[N_("col {c}").format(c=c) for c in columns], side="top",
                     showgrid=False)
    fig.update_yaxes(tickvals=list(range(len(grid))), ticktext=names, autorange="reversed", showgrid=False)
    return layout(fig, height=height)
