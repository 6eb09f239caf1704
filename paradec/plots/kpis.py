"""Step KPIs: tokens per step with the running τ, acceptance per draft depth, and the
measured draft and verify time of every step."""
from __future__ import annotations

import plotly.graph_objects as go

from ..costs import measured
from ..traces.trace import Trace
from .style import COLORS, N_, layout


def running_tau(trace: Trace, upto: int) -> float:
    """τ over steps 0..upto: tokens committed / target forwards, bonus included."""
    steps = trace.steps[: upto + 1]
    return sum(len(s.tokens) for s in steps) / max(1, sum(s.target_forwards for s in steps))


def tokens_figure(trace: Trace, current: int, height: int = 240) -> go.Figure:
    x = list(range(1, len(trace.steps) + 1))
    acc = [len(s.accepted) for s in trace.steps]
    last = [len(s.tokens) - len(s.accepted) for s in trace.steps]
    fig = go.Figure([
        go.Bar(x=x, y=acc, name=N_("accepted drafts"), marker_color=COLORS["accepted"]),
        go.Bar(x=x, y=last, name=N_("target's token"), marker_color=COLORS["bonus"]),
        go.Scatter(x=x, y=[running_tau(trace, i) for i in range(len(x))], name=N_("running τ"), mode="lines",
                   line=dict(color="black")),
    ])
    fig.add_vline(x=current + 1, line=dict(color="#f5b700", width=3))
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title=N_("step"))
    return layout(fig, N_("tokens per step (one target forward each)"), height, legend="below")


def position_figure(trace: Trace, height: int = 240) -> go.Figure:
    """α_d per draft depth: accepted / tested (Trace.depth_acceptance), the run's acceptance α depth by depth."""
    rows = trace.depth_acceptance()
    fig = go.Figure(go.Bar(
        x=[d for d, _, _ in rows], y=[a / n for _, n, a in rows], marker_color=COLORS["accepted"],
        text=[f"{a}/{n}" for _, n, a in rows], textposition="outside",
    ))
    fig.update_xaxes(title=N_("draft depth"), dtick=1)
    fig.update_yaxes(range=[0, 1.15], title=N_("accepted | tested"))
    return layout(fig, N_("acceptance per depth") if rows else "acceptance: nothing was drafted", height)


def time_figure(trace: Trace, current: int, height: int = 240) -> go.Figure:
    x = list(range(1, len(trace.steps) + 1))
    fig = go.Figure([
        go.Bar(x=x, y=[s.draft_ms for s in trace.steps], name=N_("draft ms"), marker_color=COLORS["resampled"]),
        go.Bar(x=x, y=[s.verify_ms for s in trace.steps], name=N_("verify ms"), marker_color=COLORS["bonus"]),
    ])
    fig.add_vline(x=current + 1, line=dict(color="#f5b700", width=3))
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title=N_("step"))
    fig.update_yaxes(title=N_("ms"))
    return layout(fig, N_("draft vs verify time"), height, legend="below")


COST_COLORS = ("bonus", "resampled", "accepted")


def cost_figure(cost: dict, height: int = 280) -> go.Figure:
    """Measured time of one target forward against the tokens it processes (forward_cost.json, written
    by scripts/record_traces.py), one curve per forward measured (paradec's and Hugging Face's): every
    repeat as a dot, the median as a line labelled with its multiple of the one-token pass at a few sizes (the
    first curve) or its widest (the others; hover gives every one): Home shows it in a column 220 px wide, where a
    label at every size overlapped."""
    fig = go.Figure()
    # log axis: a label per 2 octaves on the first curve (the default forward), none at one token (1.00x by
    # definition), and the others' at their widest pass only: three curves' labels at one size met
    spaced = [n for n in _spaced(cost["tokens"], 4) if n != cost["tokens"][0]]
    ticks = _spaced(cost["tokens"], 2)
    for i, ((key, curve), color) in enumerate(zip(cost["curves"].items(), COST_COLORS)):
        name, labelled = _named(key, curve.get("weights")), spaced if i == 0 else cost["tokens"][-1:]
        for n, runs in zip(cost["tokens"], curve["all_ms"]):
            fig.add_trace(go.Scatter(x=[n] * len(runs), y=runs, mode="markers", showlegend=False, hoverinfo="y",
                                     marker=dict(color=COLORS[color], size=5, opacity=0.35)))
        med = curve["median_ms"]
        times = [f"{m / med[0]:.2f}×" for m in med]
        fig.add_trace(go.Scatter(x=cost["tokens"], y=med, mode="lines+markers+text", name=name,
                                 text=[t if n in labelled else "" for n, t in zip(cost["tokens"], times)],
                                 textposition="bottom center" if i == 0 else "top left", cliponaxis=False,
                                 line=dict(color=COLORS[color], width=3), customdata=times,
                                 hovertemplate="%{x} tokens: %{y:.1f} ms, %{customdata}<extra>" + name + "</extra>"))
    fig.update_xaxes(title=N_("tokens in one target forward"), type="log", tickvals=ticks, tickangle=0)
    fig.update_yaxes(title=N_("ms (label: × the 1-token pass)"), rangemode="tozero")
    threads = cost.get("threads", "?")  # the title is short: a narrow column wraps it in two lines, no more
    title = N_("{model} on {device}, 1 thread") if threads == 1 else N_("{model} on {device}, {threads} threads")
    return layout(fig, title.format(model=cost["model"].split("/")[-1], device=cost["device"], threads=threads),
                  height)


def _named(name: str, weights: str | None) -> str:
    """A curve's legend: its forward and, unless its name says it, its weights' precision."""
    precision = measured.PRECISIONS.get(weights or "")
    return name if not precision or precision in name else f"{name} {precision}"


def _spaced(sizes: list[int], ratio: float) -> list[int]:
    """The sizes to mark: the largest, then down from it each at most 1/`ratio` of the last one marked."""
    shown = []
    for n in reversed(sizes):
        if not shown or n * ratio <= shown[-1]:
            shown.append(n)
    return shown[::-1]
