"""The rejection-sampling microscope: p and q of one drafted position, the accept test,
the residual, and a seeded simulation of the accept/resample rule.

The trace keeps the top-k of p and q, not the whole vocabulary; each list also names the
other's tokens (traces recorded before that: only its own). The simulation therefore works on
buckets whose masses are exact: every token whose p and q are both known (the drafted token's
always are) and one 'other' bucket for the rest.
Rejection sampling is exact on any such partition, so the histogram must land on p."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..core.steps import Node
from ..traces.trace import Trace
from .style import COLORS, N_, P_COLOR, Q_COLOR, RESIDUAL_COLOR, layout
from .tokens import label

OTHER = "other"


def buckets(node: Node) -> tuple[list, np.ndarray, np.ndarray]:
    """(bucket keys, p over buckets, q over buckets); the last bucket is 'other'."""
    p, q = dict(node.p_top), dict(node.q_top)
    p[node.token], q[node.token] = node.p, node.q
    keys = [t for t, _ in node.p_top if t in q]
    if node.token not in keys:
        keys.append(node.token)
    pv = np.array([p[t] for t in keys], dtype=float)
    qv = np.array([q[t] for t in keys], dtype=float)
    pv = np.append(pv, max(0.0, 1.0 - pv.sum()))
    qv = np.append(qv, max(0.0, 1.0 - qv.sum()))
    return keys + [OTHER], pv / pv.sum(), qv / qv.sum()


def simulate(p: np.ndarray, q: np.ndarray, n: int = 1000, seed: int = 0) -> tuple[np.ndarray, float]:
    """Draw x ~ q, keep it with probability min(1, p/q), else draw from norm(max(0, p - q)).
    Returns (counts per bucket, share of draws accepted)."""
    rng = np.random.default_rng(seed)
    x = rng.choice(len(q), size=n, p=q)
    ratio = np.minimum(1.0, p / np.maximum(q, 1e-30))
    keep = rng.random(n) < ratio[x]
    res = np.clip(p - q, 0.0, None)
    res = res / res.sum() if res.sum() > 0 else p
    out = np.where(keep, x, rng.choice(len(p), size=n, p=res))
    return np.bincount(out, minlength=len(p)), float(keep.mean())


def _names(trace: Trace, keys: list) -> list[str]:
    return [OTHER if k == OTHER else label(trace.text_of(k)) for k in keys]


TOKEN_ANGLE = -90  # tokens under their bars, upright: a narrow chart (a phone's, a presenter's) fits them


def pq_figure(trace: Trace, node: Node, height: int = 280) -> go.Figure:
    """Top-k of p and q side by side, on the tokens either list mentions."""
    p, q = dict(node.p_top), dict(node.q_top)
    keys = list(dict.fromkeys([node.token] + [t for t, _ in node.p_top] + [t for t, _ in node.q_top]))[:14]
    x = _names(trace, keys)
    fig = go.Figure([
        go.Bar(name=N_("p (target)"), x=x, y=[p.get(k, node.p if k == node.token else None) for k in keys],
               marker_color=P_COLOR),
        go.Bar(name=N_("q (draft)"), x=x, y=[q.get(k, node.q if k == node.token else None) for k in keys],
               marker_color=Q_COLOR),
    ])
    fig.add_annotation(x=x[0], y=max(node.p or 0, node.q or 0), text=N_("drafted"), showarrow=True, ay=-25)
    fig.update_yaxes(title=N_("probability"))
    fig.update_xaxes(tickangle=TOKEN_ANGLE)
    return layout(fig, N_("top-k of p and q (no bar: outside that top-k)"), height)


def accept_figure(node: Node, height: int = 280) -> go.Figure:
    """u against min(1, p/q): the draft token survives when u falls under the bar. u's value is written over its
    line (under it near the top): beside it, it ran past the plot's right edge in the microscope's narrow column."""
    a = node.accept_prob
    fig = go.Figure(go.Bar(x=["min(1, p/q)"], y=[a], marker_color=COLORS["accepted"], width=0.5, name="min(1,p/q)"))
    fig.add_trace(go.Scatter(
        x=["min(1, p/q)"], y=[node.u], mode="markers+text", text=[f"u = {node.u:.3f}"],
        textposition="top center" if node.u <= 0.7 else "bottom center",
        marker=dict(symbol="line-ew", size=60, line=dict(width=4, color="black")), name="u",
    ))
    fig.update_yaxes(range=[0, 1.05], title=N_("probability"))
    fig.update_layout(showlegend=False)
    return layout(fig, N_("u vs min(1,p/q): {status}").format(status=N_(node.status)), height)


def residual_figure(trace: Trace, residual_top: list, height: int = 280) -> go.Figure:
    x = [label(trace.text_of(t)) for t, _ in residual_top]
    fig = go.Figure(go.Bar(x=x, y=[p for _, p in residual_top], marker_color=RESIDUAL_COLOR))
    fig.update_yaxes(title=N_("probability"))
    fig.update_xaxes(tickangle=TOKEN_ANGLE)
    return layout(fig, N_("residual norm(max(0, p − q))"), height)


def histogram_figure(trace: Trace, node: Node, n: int = 1000, seed: int = 0, height: int = 300) -> go.Figure:
    keys, p, q = buckets(node)
    counts, accepted = simulate(p, q, n, seed)
    x = _names(trace, keys)
    fig = go.Figure([
        go.Bar(name=N_("{n} simulated draws").format(n=n), x=x, y=counts / n, marker_color=RESIDUAL_COLOR),
        go.Bar(name=N_("p (target)"), x=x, y=p, marker_color=P_COLOR, opacity=0.55),
        go.Bar(name=N_("q (draft)"), x=x, y=q, marker_color=Q_COLOR, opacity=0.55),
    ])
    fig.update_yaxes(title=N_("share"))
    fig.update_xaxes(tickangle=TOKEN_ANGLE)
    return layout(fig, N_("{n} runs of the rule: {accepted:.0%} kept the draft, the rest resampled").format(
        n=n, accepted=accepted), height)
