"""The arena: several traces of the same prompt and settings, raced on their measured step
times, with τ, speedup against AR and acceptance-length histograms."""
from __future__ import annotations

import plotly.graph_objects as go

from ..traces.trace import Trace
from .style import N_, layout

# one distinct colour per method: the arena races nine, the benchmark shows twelve with the peers
PALETTE = ["#6b6b6b", "#2ca02c", "#1f77b4", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
           "#d62728", "#393b79", "#637939"]


def finish_times(trace: Trace) -> list[float]:
    """Cumulative measured ms at the end of each step (draft + verify)."""
    out, t = [], 0.0
    for s in trace.steps:
        t += s.draft_ms + s.verify_ms
        out.append(t)
    return out


def tokens_at(trace: Trace, ends: list[float], t: float) -> int:
    return sum(len(s.tokens) for s, e in zip(trace.steps, ends) if e <= t)


def race_figure(traces: dict[str, Trace], frames: int = 40, height: int | None = None) -> go.Figure:
    """A bar per method growing with the tokens it had committed at each moment of the run; it opens
    at the start (every bar at 0) and every bar is named."""
    names = list(traces)
    ends = {m: finish_times(tr) for m, tr in traces.items()}
    t_max = max((e[-1] for e in ends.values() if e), default=1.0)
    ticks = [t_max * j / frames for j in range(frames + 1)]
    colors = [PALETTE[k % len(PALETTE)] for k in range(len(names))]

    def bar(t: float) -> go.Bar:
        xs = [tokens_at(traces[m], ends[m], t) for m in names]
        return go.Bar(x=xs, y=names, orientation="h", marker_color=colors, text=xs, textposition="outside")

    fig = go.Figure(bar(ticks[0]), frames=[go.Frame(data=[bar(t)], name=f"{t:.0f}") for t in ticks])
    top = max(tr.new_tokens for tr in traces.values())
    fig.update_xaxes(range=[0, top * 1.15], title=N_("tokens committed"))
    fig.update_yaxes(tickmode="array", tickvals=names, autorange="reversed")  # a name on every bar, AR on top
    fig.update_layout(
        updatemenus=[dict(type="buttons", direction="left", x=0, y=-0.25, showactive=False, buttons=[
            dict(label="▶ Race", method="animate",
                 args=[None, dict(frame=dict(duration=100, redraw=True), fromcurrent=False,
                                  transition=dict(duration=0))]),
            dict(label="Pause", method="animate", args=[[None], dict(mode="immediate", frame=dict(duration=0))]),
        ])],
        sliders=[dict(x=0.15, y=-0.18, len=0.85, currentvalue=dict(prefix="ms since start: "), steps=[
            dict(label=f.name, method="animate", args=[[f.name], dict(mode="immediate", frame=dict(duration=0))])
            for f in fig.frames
        ])],
    )
    fig.update_layout(margin=dict(b=90))
    return layout(fig, N_("race on measured step times: press ▶ Race"), height or 26 * len(names) + 170)


def bars_figure(values: dict[str, float], title: str, fmt: str = "{:.2f}", height: int = 240) -> go.Figure:
    """A bar per method, lying down: the names read across in a column a third of the page wide, where standing
    bars' slanted names ran into each other, and each value fits beside its bar (the first method on top)."""
    names = list(values)
    fig = go.Figure(go.Bar(
        y=names, x=[values[m] for m in names], orientation="h", text=[fmt.format(values[m]) for m in names],
        textposition="outside", marker_color=[PALETTE[k % len(PALETTE)] for k in range(len(names))],
        hovertemplate="%{y}: %{text}<extra></extra>",
    ))
    fig.update_xaxes(range=[0, max(values.values(), default=1) * 1.35])
    fig.update_yaxes(autorange="reversed")
    return layout(fig, title, max(height, 22 * len(names) + 90))


def length_histogram(traces: dict[str, Trace], height: int = 240) -> go.Figure:
    """How many tokens each step committed (acceptance length, bonus included)."""
    fig = go.Figure([
        go.Histogram(x=[len(s.tokens) for s in tr.steps], name=m, marker_color=PALETTE[k % len(PALETTE)])
        for k, (m, tr) in enumerate(traces.items())
    ])
    fig.update_layout(barmode="group")
    fig.update_xaxes(title=N_("tokens per step (bonus included)"), dtick=1)
    fig.update_yaxes(title=N_("steps"))
    # A column of many runs in a figure a whole row wide (the Arena), a row of a few under a narrow one (EAGLE)
    return layout(fig, N_("acceptance length"), height, legend="right" if len(traces) > 4 else "below")
