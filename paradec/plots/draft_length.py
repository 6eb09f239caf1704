"""Draft-length rules compared: runs of one method on the same prompt that differ only in how
long each step's draft gets (fixed, heuristic, confidence, learned): tokens for a chain (sps,
early exit), depths for a tree (EAGLE, Medusa). Pure trace -> figure builders."""
from __future__ import annotations

import plotly.graph_objects as go

from ..core import records
from ..traces.trace import Trace, rounded
from .arena import PALETTE, bars_figure, finish_times
from .style import COLORS, N_, layout


def lengths(trace: Trace) -> list[int]:
    """Tokens (a chain) or depths (a tree) drafted per step, what the rule decided; a method with no
    rule drafted its nodes."""
    return [s.record.draft_length if isinstance(s.record, records.DraftLength) else len(s.nodes) for s in trace.steps]


def lengths_figure(traces: dict[str, Trace], height: int = 300, unit: str = "tokens") -> go.Figure:
    """One line per rule: the draft length of each step; hover adds how many were accepted."""
    fig = go.Figure([
        go.Scatter(x=list(range(len(t.steps))), y=lengths(t), mode="lines+markers", name=name, line_shape="hv",
                   marker=dict(size=5), line=dict(color=PALETTE[(k + 1) % len(PALETTE)]),
                   customdata=[len(s.accepted) for s in t.steps],
                   hovertemplate=f"{name}<br>step %{{x}}: drafted %{{y}}, accepted %{{customdata}}<extra></extra>")
        for k, (name, t) in enumerate(traces.items())
    ])
    fig.update_xaxes(title=N_("step (one target forward)"))
    fig.update_yaxes(title=N_("{unit} drafted").format(unit=unit), rangemode="tozero", dtick=2)
    return layout(fig, N_("draft length per step"), height)


def per_token_ms(trace: Trace) -> tuple[float, float]:
    """Measured (draft, verify) milliseconds per committed token."""
    n = max(1, trace.new_tokens)
    return sum(s.draft_ms for s in trace.steps) / n, sum(s.verify_ms for s in trace.steps) / n


def rows(traces: dict[str, Trace]) -> list[dict]:
    """One row per rule: the settings that differ between the runs, what τ and speed the rule bought,
    what it drafted (per step that drafted), and what the step times measured."""
    keys = dict.fromkeys(k for t in traces.values() for k in t.params)
    differ = [k for k in keys if len({repr(t.params.get(k)) for t in traces.values()}) > 1]
    out = []
    for name, t in traces.items():
        steps = [(n, s) for n, s in zip(lengths(t), t.steps) if s.nodes]  # EAGLE's first step drafts nothing
        (draft, verify), count = per_token_ms(t), max(1, len(steps))
        ends = finish_times(t)
        out.append({"rule": name, "settings": ", ".join(f"{k}={t.params.get(k)}" for k in differ),
                    "τ": round(t.tau, 2),
                    "tokens / s": round(1e3 * t.new_tokens / ends[-1], 1) if ends and ends[-1] else 0.0,
                    "draft length / step": round(sum(n for n, _ in steps) / count, 2),
                    "tokens verified / step": round(sum(len(s.nodes) for _, s in steps) / count, 2),
                    "acceptance": rounded(t.acceptance, 2),
                    "draft ms / token": round(draft, 1), "verify ms / token": round(verify, 1)})
    return out


def time_figure(traces: dict[str, Trace], height: int = 260) -> go.Figure:
    """Measured ms per committed token, split into drafting (the draft model) and verifying (the target)."""
    names = list(traces)
    ms = [per_token_ms(traces[m]) for m in names]
    fig = go.Figure([
        go.Bar(y=names, x=[d for d, _ in ms], orientation="h", name=N_("draft"),
               marker_color=COLORS["resampled"]),
        go.Bar(y=names, x=[v for _, v in ms], orientation="h", name=N_("verify (target)"),
               marker_color=COLORS["bonus"]),
    ])
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title=N_("ms / token"))  # short: the panel is a third of the page
    fig.update_yaxes(autorange="reversed")
    return layout(fig, N_("where the time goes"), height)


def tau_figure(traces: dict[str, Trace]) -> go.Figure:
    return bars_figure({m: t.tau for m, t in traces.items()}, "τ: tokens per target forward")


def calibration(trace: Trace, bins: int = 5) -> list[dict]:
    """The learned rule's predicted chance that the draft's token at position i (a tree: on the branch
    it was asked along, depth i + 1) is committed against whether the accepted path reached that far,
    by equal-width bins of the prediction (only steps that recorded a chance)."""
    pairs = [(c, len(s.accepted) > i) for s in trace.steps if isinstance(s.record, records.DraftLength)
             for i, c in enumerate(s.record.chance or ())]
    groups: dict[int, list[tuple[float, bool]]] = {}
    for c, hit in pairs:
        groups.setdefault(min(bins - 1, int(c * bins)), []).append((c, hit))
    return [{"predicted": round(sum(c for c, _ in g) / len(g), 3), "committed": round(sum(h for _, h in g) / len(g), 3),
             "tokens": len(g)} for _, g in sorted(groups.items())]


def calibration_figure(trace: Trace, height: int = 260) -> go.Figure:
    """Predicted against observed: on the diagonal the predictor's chances mean what they say."""
    cal = calibration(trace)
    fig = go.Figure([
        go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(dash="dot", color=COLORS["unreached"]),
                   name=N_("perfectly calibrated"), hoverinfo="skip"),
        go.Scatter(x=[r["predicted"] for r in cal], y=[r["committed"] for r in cal], mode="markers+text",
                   marker=dict(size=[6 + min(24, r["tokens"]) for r in cal], color=COLORS["accepted"]),
                   text=[r["tokens"] for r in cal], textposition="top center", name=N_("drafted tokens (count)"),
                   cliponaxis=False),  # a count over a point at 1.0 stands over the plot area
    ])
    fig.update_xaxes(title=N_("predicted chance of being committed"), range=[0, 1.02])
    fig.update_yaxes(title=N_("share committed"), range=[0, 1.1])
    return layout(fig, N_("does the predicted chance hold?"), height)
