"""A tune run (paradec.tuner.tune) as a figure: every candidate's speed-up against τ on the prompts it reached, its
settings on hover, the Pareto front joined, the chosen setting and the defaults marked."""
from __future__ import annotations

import plotly.graph_objects as go

from .style import N_, layout


def front_figure(method: str, mine: dict, height: int = 340) -> go.Figure:
    points, front = mine["points"], mine["front"]
    final = mine.get("final", {})
    fig = go.Figure(go.Scatter(
        x=[p["tau"] for p in points.values()], y=[p["speedup"] for p in points.values()], mode="markers",
        name=N_("candidates"), text=list(points), customdata=[p["runs"] for p in points.values()],
        marker=dict(color="#9e9e9e", size=8),
        hovertemplate="%{text}<br>τ %{x:.2f}, %{y:.2f}× on %{customdata} prompts<extra></extra>"))
    fig.add_trace(go.Scatter(x=[points[k]["tau"] for k in front], y=[points[k]["speedup"] for k in front],
                             mode="lines+markers", name=N_("Pareto front"), text=front, line=dict(color="#1f77b4"),
                             hovertemplate="%{text}<br>τ %{x:.2f}, %{y:.2f}×<extra></extra>"))
    for key, name, color in ((final.get("best"), "chosen", "#2ca02c"), ("defaults", "defaults", "#d62728")):
        if key in points:
            fig.add_trace(go.Scatter(x=[points[key]["tau"]], y=[points[key]["speedup"]], mode="markers", name=name,
                                     text=[key], marker=dict(color=color, size=14, symbol="star"),
                                     hovertemplate=f"{name}: %{{text}}<br>τ %{{x:.2f}}, %{{y:.2f}}×<extra></extra>"))
    fig.add_hline(y=1, line=dict(color="black", dash="dash"))
    fig.update_xaxes(title=N_("τ (tokens per target forward)"))
    fig.update_yaxes(title=N_("speedup vs AR (search prompts)"), rangemode="tozero")
    return layout(fig, N_("{method}: speed-up against τ, every candidate").format(method=method), height)
