"""Jacobi decoding's convergence grid: iterations down, generated positions across, every
cell one guess of the block, coloured by what happened to it in that iteration.

Each step of a Jacobi trace is one iteration (one target forward). Its record
(paradec.core.records.Jacobi) holds the block of guesses and, per guess, whether it differs from
the previous iteration's guess at the same position (changed). The converged prefix is the step's accepted path;
the target adds one token of its own after it, so every iteration commits at least one."""
from __future__ import annotations

import plotly.graph_objects as go

from ..traces.trace import Trace
from .style import COLORS, MIN_TEXT, N_, STAGE_PX, cell_chars, layout
from .tokens import label

CHANGED, STABLE, COMMITTED = "changed", "stable", "committed"
STATE_COLORS = {CHANGED: COLORS["resampled"], STABLE: "#9ecae1", COMMITTED: COLORS["accepted"]}
STATE_HELP = {
    CHANGED: "changed: differs from the previous iteration's guess here",
    STABLE: "stable: same guess as the previous iteration, not yet committed",
    COMMITTED: "committed in this iteration",
}
ROWS = 10  # iterations shown at once: the grid follows the player, newest iteration at the bottom


def cells(trace: Trace, i: int) -> list[dict]:
    """Step i's block as cells: generated position, the guess, its state, and the committed
    token (the guess itself on the converged prefix, the target's own token right after it)."""
    s = trace.steps[i]
    start = s.context_len - len(trace.prompt_ids)  # generated index of the block's first guess
    out = []
    for k, (guess, changed) in enumerate(zip(s.record.block, s.record.changed)):
        state = COMMITTED if k < len(s.tokens) else CHANGED if changed else STABLE
        out.append({"position": start + k, "guess": guess, "state": state,
                    "token": s.tokens[k] if k < len(s.tokens) else None, "fixed": k < len(s.accepted)})
    return out


def _hover(trace: Trace, i: int, c: dict) -> str:
    head = f"iteration {i + 1}, position {c['position']}: guess {label(trace.text_of(c['guess']))}"
    if c["state"] != COMMITTED:
        return f"{head}<br>{STATE_HELP[c['state']]}"
    if c["fixed"]:
        return f"{head}<br>fixed point: the target predicted this same token, so it is committed"
    return (f"{head}<br>first guess that was not fixed: the target's own token "
            f"{label(trace.text_of(c['token']))} is committed in its place (at least one token per pass)")


def _dtick(columns: int, width: int) -> int:
    """A tick every how many positions, so that their numbers do not run together (see cell_chars)."""
    return next(k for k in (1, 2, 5, 10, 20, 50) if k * (width - 60) / columns >= 26)


def grid_figure(trace: Trace, upto: int, rows: int = ROWS, height: int = 330, width: int = STAGE_PX) -> go.Figure:
    """The last `rows` iterations up to step `upto` (0-based), the current one outlined. width: the
    narrowest the figure is shown, which sets how much of each token its cell can show."""
    first = max(0, upto - rows + 1)
    blocks = {i: cells(trace, i) for i in range(first, upto + 1)}
    x0 = min(c["position"] for b in blocks.values() for c in b)
    columns = max(c["position"] for b in blocks.values() for c in b) - x0 + 1
    chars = cell_chars(columns, width, most=6)
    codes = {state: k for k, state in enumerate(STATE_COLORS)}
    z = [[None] * columns for _ in blocks]  # None: no guess there in that iteration (blank cell)
    text = [[""] * columns for _ in blocks]
    hover = [[""] * columns for _ in blocks]
    for r, (i, block) in enumerate(blocks.items()):
        for c in block:
            x = c["position"] - x0
            z[r][x] = codes[c["state"]]
            text[r][x] = label(trace.text_of(c["token"] if c["token"] is not None else c["guess"]))[:chars]
            hover[r][x] = _hover(trace, i, c)
    n = len(STATE_COLORS)
    scale = [[v, color] for k, color in enumerate(STATE_COLORS.values()) for v in (k / n, (k + 1) / n)]
    fig = go.Figure(go.Heatmap(
        z=z, x=list(range(x0, x0 + columns)), y=[i + 1 for i in blocks], text=text, texttemplate="%{text}",
        textfont=dict(size=MIN_TEXT), hovertext=hover, hoverinfo="text", zmin=-0.5, zmax=n - 0.5, colorscale=scale,
        showscale=False, xgap=2, ygap=2,
    ))
    for state, color in STATE_COLORS.items():  # legend entries only: a heatmap has no legend of its own
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=state,
                                 marker=dict(symbol="square", size=12, color=color)))
    now = blocks[upto]
    fig.add_shape(type="rect", x0=now[0]["position"] - 0.5, x1=now[-1]["position"] + 0.5, y0=upto + 0.5,
                  y1=upto + 1.5, line=dict(color="black", width=2))
    fig.update_xaxes(title=N_("generated position"), dtick=_dtick(columns, width), showgrid=False, zeroline=False)
    fig.update_yaxes(title=N_("iteration"), dtick=1, showgrid=False, autorange="reversed")
    return layout(fig, N_("convergence grid: each row is one target forward over the block"), height)


def committed_per_forward(trace: Trace) -> dict[int, int]:
    """How many iterations committed 1, 2, 3... tokens."""
    out: dict[int, int] = {}
    for s in trace.steps:
        out[len(s.tokens)] = out.get(len(s.tokens), 0) + 1
    return dict(sorted(out.items()))


def committed_figure(trace: Trace, current: int, height: int = 330) -> go.Figure:
    """Iterations by tokens committed, the bar of the current iteration's count highlighted."""
    counts = committed_per_forward(trace)
    now = len(trace.steps[current].tokens)
    fig = go.Figure(go.Bar(
        x=list(counts), y=list(counts.values()), text=list(counts.values()), textposition="outside",
        marker_color=[COLORS["accepted"] if k == now else "#9ecae1" for k in counts],
    ))
    fig.update_xaxes(title=N_("tokens committed by one forward"), dtick=1)
    fig.update_yaxes(title=N_("iterations"), range=[0, max(counts.values()) * 1.2])
    return layout(fig, N_("τ = {tau:.2f} · this pass: {now}").format(tau=trace.tau, now=now), height)


def position_figure(trace: Trace, height: int = 280) -> go.Figure:
    """Why a pass is checked from its first position: the share of passes that committed the token at
    each position of the block. Position 1 is predicted from committed tokens only, so it is right every
    time; position k needs the k - 1 guesses before it right as well."""
    passes = [s for s in trace.steps if s.nodes]  # the prefill drafts nothing
    longest = max((len(s.tokens) for s in passes), default=1)
    share = [sum(len(s.tokens) >= k for s in passes) / max(1, len(passes)) for k in range(1, longest + 1)]
    fig = go.Figure(go.Bar(
        x=list(range(1, longest + 1)), y=share, text=[f"{v:.0%}" for v in share], textposition="outside",
        marker_color=[COLORS["target"]] + [COLORS["accepted"]] * (longest - 1),
    ))
    fig.update_xaxes(title=N_("position in the block"), dtick=1)
    fig.update_yaxes(title=N_("passes that committed it"), range=[0, 1.2], tickformat=".0%")
    return layout(fig, N_("committed, by position"), height)
