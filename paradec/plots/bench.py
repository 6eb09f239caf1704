"""A benchmark results file (paradec.bench_report) as figures: speedup by method and category,
acceptance per draft position, and speedup against τ."""
from __future__ import annotations

import plotly.graph_objects as go

from .arena import PALETTE
from .style import N_, layout


def _colors(report: dict) -> dict[str, str]:
    return {m: PALETTE[k % len(PALETTE)] for k, m in enumerate(report["methods"])}


def _layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    """The shared look; a legend of more than three methods in a column right of the plot (a row below would
    wrap into three at 1024 px)."""
    return layout(fig, title, height, legend="right" if len(fig.data) > 3 else "below")


def speedup_figure(report: dict, height: int = 440) -> go.Figure:
    """Grouped bars: each method's speedup against AR, over all prompts and per category."""
    groups = ["all", *report["categories"]]
    by_group = [report["methods"], *report["categories"].values()]
    colors = _colors(report)
    fig = go.Figure([
        go.Bar(x=groups, y=[g.get(m, {}).get("speedup") for g in by_group], name=m, marker_color=colors[m],
               hovertemplate=f"{m} · %{{x}}: %{{y:.2f}}×<extra></extra>")
        for m in report["methods"] if m != "ar"
    ])
    fig.add_hline(y=1, line=dict(color="black", dash="dash"), annotation_text="AR", annotation_position="top left")
    fig.update_layout(barmode="group")
    fig.update_yaxes(title=N_("speedup vs AR (same run)"), rangemode="tozero")
    return _layout(fig, "speedup by method and category", height)


def positions_figure(report: dict, height: int = 320) -> go.Figure:
    """Share of steps whose accepted path reached each draft depth, per method."""
    colors = _colors(report)
    fig = go.Figure([
        go.Scatter(x=[p[0] for p in m["acceptance_by_position"]], y=[p[3] for p in m["acceptance_by_position"]],
                   mode="lines+markers", name=name, line=dict(color=colors[name]),
                   customdata=[f"{p[2]}/{p[1]}" for p in m["acceptance_by_position"]],
                   hovertemplate=f"{name} depth %{{x}}: %{{y:.2f}} (%{{customdata}})<extra></extra>")
        for name, m in report["methods"].items() if m["acceptance_by_position"]
    ])
    fig.update_xaxes(title=N_("draft depth"), dtick=1)
    fig.update_yaxes(title=N_("accepted share"), range=[0, 1.05])
    return _layout(fig, "acceptance per draft position", height)


def tau_scatter(report: dict, height: int = 380) -> go.Figure:
    """Speedup against τ, one point per method and category. With free drafting and a verify
    pass that cost no more than an AR step, speedup would equal τ (the diagonal)."""
    colors = _colors(report)
    fig = go.Figure()
    top = 1.0
    for name in report["methods"]:
        pts = [(c, g[name]) for c, g in report["categories"].items()
               if g.get(name, {}).get("tau") is not None and g[name]["speedup"] is not None]
        if not pts or name == "ar":
            continue
        top = max([top] + [m["tau"] for _, m in pts] + [m["speedup"] for _, m in pts])
        fig.add_trace(go.Scatter(x=[m["tau"] for _, m in pts], y=[m["speedup"] for _, m in pts], mode="markers",
                                 name=name, text=[c for c, _ in pts], marker=dict(color=colors[name], size=9),
                                 hovertemplate=f"{name} · %{{text}}: τ %{{x:.2f}}, %{{y:.2f}}×<extra></extra>"))
    fig.add_trace(go.Scatter(x=[1, top * 1.05], y=[1, top * 1.05], mode="lines", name=N_("speedup = τ"),
                             line=dict(color="gray", dash="dot"), hoverinfo="skip"))
    fig.add_hline(y=1, line=dict(color="black", dash="dash"))
    fig.update_xaxes(title=N_("τ (tokens per target forward)"))
    fig.update_yaxes(title=N_("speedup vs AR"), rangemode="tozero")
    return _layout(fig, "speedup against τ (one point per category)", height)
