"""A bench run's batch sizes (bench --batch, paradec.bench_batch) as figures: each method's throughput and its
speedup over AR at the same batch size, against the batch size, and each batch's verify pass on the roofline."""
from __future__ import annotations

import plotly.graph_objects as go

from ..bench_batch import by_batch, crossing
from ..costs import roofline
from .arena import PALETTE
from .style import N_, layout


def _sizes(by: dict) -> list[int]:
    return sorted(int(b) for b in by)


def throughput_figure(report: dict, height: int = 340) -> go.Figure:
    """The whole batch's tokens per second against the batch size, per method (AR dashed)."""
    fig = go.Figure()
    for k, (m, by) in enumerate(by_batch(report).items()):
        sizes = _sizes(by)
        fig.add_scatter(x=sizes, y=[by[str(b)]["tokens_per_s"] for b in sizes], name=m, mode="lines+markers",
                        line=dict(color=PALETTE[k % len(PALETTE)], dash="dash" if m == "ar" else "solid"),
                        hovertemplate=f"{m} · B=%{{x}}: %{{y:.0f}} tokens/s<extra></extra>")
    fig.update_xaxes(title=N_("batch size B"), type="log", dtick=0.30103)
    fig.update_yaxes(title=N_("tokens/s (whole batch)"), rangemode="tozero")
    return layout(fig, N_("throughput by batch size"), height)


def speedup_figure(report: dict, height: int = 340) -> go.Figure:
    """Each method's speedup over AR at the same batch size, the 1.0 line, and where it crosses it."""
    fig = go.Figure()
    for k, (m, by) in enumerate(by_batch(report).items()):
        if m == "ar":
            continue
        sizes, color = _sizes(by), PALETTE[k % len(PALETTE)]
        fig.add_scatter(x=sizes, y=[by[str(b)]["speedup"] for b in sizes], name=m, mode="lines+markers",
                        line=dict(color=color), hovertemplate=f"{m} · B=%{{x}}: %{{y:.2f}}×<extra></extra>")
        at = crossing(by)
        if at is not None:
            fig.add_vline(x=at, line=dict(color=color, dash="dot", width=1))
    fig.add_hline(y=1, line=dict(color="black", dash="dash"))
    fig.update_xaxes(title=N_("batch size B"), type="log", dtick=0.30103)
    fig.update_yaxes(title=N_("speedup vs AR at the same B"))
    return layout(fig, N_("speedup by batch size"), height)  # the dotted lines: the header's help


def passes(report: dict, model: roofline.ModelShape, context: int = 100) -> list[dict]:
    """Each method's mean verify pass at each batch size: its rows and its arithmetic intensity (the roofline's
    model at the model's dtype, `context` tokens cached per sequence)."""
    out = []
    for m, by in by_batch(report).items():
        for b in _sizes(by):
            rows = by[str(b)].get("rows")
            if rows:
                cost = roofline.forward_cost(model, max(1, round(rows / b)), context, b)
                out.append({"method": m, "B": b, "rows": rows, "intensity": cost.intensity})
    return out
