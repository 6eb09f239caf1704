"""The roofline of a chip with the passes of decoding placed on it, and the speculative step's
cost breakdown and sweeps (paradec.costs.roofline / paradec.costs.speccost in, plotly figures out)."""
from __future__ import annotations

import math

import plotly.graph_objects as go

from ..costs import roofline
from ..costs.measured import PRECISIONS
from ..costs.roofline import Hardware, ModelShape
from ..costs.speccost import SpecStep
from .style import COLORS, N_, layout

VERIFY_KS = (1, 2, 4, 8, 16, 32, 64)  # drafted tokens in a verify pass (plus the pending token)
LABELLED = (1, 8, 64)
LABEL_AT = {8: "top center", 64: "bottom left"}  # above the line, and inside the plot: apart on a phone too
STEP_COLOR = "#f5b700"
TIMED_COLORS = {"q4": "#7b3294", "f32": COLORS["resampled"]}  # the passes timed on this machine, by weights


def _point(hw, dtype, cost, name, text, color, symbol="circle", size=11, position="top center") -> go.Scatter:
    t = roofline.seconds(hw, dtype, cost)
    bound = "memory" if roofline.memory_bound(hw, dtype, cost) else "compute"
    return go.Scatter(x=[cost.intensity], y=[cost.flops / t], mode="markers+text", name=name, text=[text],
                      textposition=position, marker=dict(color=color, size=size, symbol=symbol),
                      hovertemplate=f"{name}<br>%{{x:.1f}} FLOP/byte<br>{t * 1e3:.3g} ms (MODEL, {bound}-bound)"
                                    "<extra></extra>")


def _passes(hw: Hardware, m: ModelShape, dtype: str, context: int, batch: int) -> list[go.Scatter]:
    """AR decode, the prefill of a `context`-token prompt, and verify passes of k drafted tokens."""
    ar = roofline.forward_cost(m, 1, context, batch)
    prefill = roofline.forward_cost(m, context, 0, batch, logit_rows=1)
    verify = [roofline.forward_cost(m, k + 1, context, batch) for k in VERIFY_KS]
    times = [roofline.seconds(hw, dtype, c) for c in verify]
    line = go.Scatter(x=[c.intensity for c in verify], y=[c.flops / t for c, t in zip(verify, times)],
                      mode="lines+markers+text", name=N_("verify k drafted"),
                      text=[f"k={k}" if k in LABELLED else "" for k in VERIFY_KS],  # every label: they overlap
                      textposition=[LABEL_AT.get(k, "bottom right") for k in VERIFY_KS],
                      line=dict(color=COLORS["bonus"]),
                      customdata=[t * 1e3 for t in times],
                      hovertext=[f"k={k}" for k in VERIFY_KS],
                      hovertemplate="verify: %{hovertext}<br>%{x:.1f} FLOP/byte<br>%{customdata:.3g} ms (MODEL)"
                                    "<extra></extra>")
    return [line, _point(hw, dtype, ar, "AR decode (1 token)", "AR", COLORS["target"]),
            _point(hw, dtype, prefill, N_("prefill ({n} tokens)").format(n=context), "prefill", COLORS["accepted"],
                   position="top left")]  # the rightmost point: its label inside the plot


def roofline_figure(hw: Hardware, m: ModelShape, dtype: str, context: int = 512, batch: int = 1,
                    step: dict | None = None, height: int = 380, timed: dict | None = None) -> go.Figure:
    """Log-log roofline with the ridge marked. step: {'label', 'n', 'c', 'rows', 'measured_s', 'weights'}
    places one recorded verify pass twice: where the model puts it, and at its measured time. timed:
    {'context', 'curves': {weights: {tokens: ms}}} places the passes timed on this chip at each precision."""
    m = m.with_dtype(dtype)
    fig = go.Figure(_passes(hw, m, dtype, context, batch))
    if timed:
        fig.add_traces(_timed(m, timed))
    if step:
        fig.add_traces(_step(hw, m.with_weights(step.get("weights", "f32")), dtype, step))
    xs = [x for tr in fig.data for x in tr.x]
    ridge = hw.ridge(dtype)
    lo, hi = min(xs + [ridge]) / 2, max(xs + [ridge]) * 2
    roof = [lo, ridge, hi]  # the bend at the ridge: the line of bandwidth, then the flat of the peak
    fig.add_trace(go.Scatter(x=roof, y=[roofline.attainable(hw, dtype, x) for x in roof], mode="lines", name=N_("roof"),
                             line=dict(color="black", width=2), hoverinfo="skip"))
    fig.add_vline(x=ridge, line=dict(color="gray", dash="dot"))
    fig.add_annotation(x=ridge, y=0, yref="paper", text=N_("ridge {ridge:.3g} FLOP/byte").format(ridge=ridge),
                       showarrow=False, textangle=-90, xanchor="right", yanchor="bottom",  # up the line from the
                       font=dict(size=11, color="gray"))  # foot: clear of the passes' labels and a narrow legend
    ys = [y for tr in fig.data for y in tr.y]
    fig.update_xaxes(type="log", title=N_("arithmetic intensity (FLOP per byte moved)"),
                     range=[math.log10(lo), math.log10(hi)])  # fitted to the points, roof and ridge
    fig.update_yaxes(type="log", title=N_("FLOP/s"), range=[math.log10(min(ys) / 2), math.log10(max(ys) * 2)])
    return layout(fig, N_("{model} ({dtype}, batch {batch}) on {hw}").format(model=m.name, dtype=dtype, batch=batch,
                                                                               hw=hw.name), height)


def _timed(m: ModelShape, timed: dict) -> list[go.Scatter]:
    """Each precision's passes as measured: a pass's intensity from its weights' bytes (the model's count), its
    FLOPs over its measured time; AR (one token) the large marker (the model's passes carry the labels)."""
    out = []
    for weights, ms in timed["curves"].items():
        shape, ns = m.with_weights(weights), sorted(ms)
        costs = [roofline.forward_cost(shape, n, timed["context"]) for n in ns]
        name = N_("{precision}: AR and verify passes (measured)").format(
            precision=PRECISIONS.get(weights, weights))
        out.append(go.Scatter(
            x=[c.intensity for c in costs], y=[c.flops / (ms[n] / 1e3) for c, n in zip(costs, ns)],
            mode="lines+markers", name=name, line=dict(color=TIMED_COLORS.get(weights, "black"), dash="dash"),
            marker=dict(symbol="diamond", size=[13 if n == 1 else 6 for n in ns]),  # AR's the large one
            customdata=[[n, ms[n]] for n in ns],
            hovertemplate=f"{name}<br>%{{customdata[0]}} tokens: %{{customdata[1]:.3g}} ms (MEASURED)"
                          "<br>%{x:.1f} FLOP/byte<extra></extra>"))
    return out


def _step(hw: Hardware, m: ModelShape, dtype: str, step: dict) -> list[go.Scatter]:
    cost = roofline.forward_cost(m, step["n"], step["c"], 1, step["rows"])
    model_s = roofline.seconds(hw, dtype, cost)
    x = [cost.intensity] * 2
    y = [cost.flops / model_s, cost.flops / step["measured_s"]]
    tip = (f"{step['label']}: {step['n']} tokens after {step['c']} cached<br>"
           f"MODEL {model_s * 1e3:.3g} ms · MEASURED {step['measured_s'] * 1e3:.3g} ms")
    return [go.Scatter(x=x, y=y, mode="lines", line=dict(color=STEP_COLOR, dash="dot"), showlegend=False,
                       hoverinfo="skip"),
            go.Scatter(x=x, y=y, mode="markers", name=N_("{label}: model · measured").format(label=step["label"]),
                       marker=dict(color=STEP_COLOR, size=[16, 16], symbol=["star", "diamond"],
                                   line=dict(color="black", width=1)),
                       hovertemplate=tip + "<extra></extra>")]


def breakdown_figure(cost: SpecStep, tau: float, unit: str = "AR steps", height: int = 230) -> go.Figure:
    """The time to commit τ tokens: τ AR steps against one speculative step (draft, verify, overhead)."""
    rows = ["AR: τ forwards", "speculative: 1 step"]
    parts = [("AR forwards", [tau * cost.ar, 0], COLORS["target"]), ("draft", [0, cost.draft], COLORS["resampled"]),
             ("verify", [0, cost.verify], COLORS["bonus"]), ("overhead", [0, cost.overhead], COLORS["unreached"])]
    fig = go.Figure([go.Bar(y=rows, x=x, name=name, orientation="h", marker_color=color,
                            hovertemplate=f"{name}: %{{x:.3g}} {unit}<extra></extra>") for name, x, color in parts])
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title=N_("time for τ = {tau:.2f} tokens ({unit})").format(tau=tau, unit=unit))
    title = N_("predicted speedup {speedup:.2f}× (break-even τ = {tau:.2f})").format(speedup=cost.speedup(tau),
                                                                                   tau=cost.break_even_tau)
    return layout(fig, title, height)


def sweep_figure(xs: list, speedups: list[float], x_title: str, title: str, height: int = 230) -> go.Figure:
    """Predicted speedup against one knob (batch, tree size), with the 1x line."""
    colors = [COLORS["accepted"] if s >= 1 else COLORS["rejected"] for s in speedups]
    fig = go.Figure(go.Scatter(x=xs, y=speedups, mode="lines+markers", marker=dict(color=colors, size=8),
                               line=dict(color=COLORS["unreached"]), showlegend=False,
                               hovertemplate=f"{x_title} %{{x}}: %{{y:.2f}}×<extra></extra>"))
    fig.add_hline(y=1, line=dict(color="black", dash="dash"))
    fig.update_xaxes(type="log", title=x_title, tickvals=xs)
    fig.update_yaxes(title=N_("speedup vs AR"), rangemode="tozero")
    return layout(fig, title, height)
