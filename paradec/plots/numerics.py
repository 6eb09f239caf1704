"""The numerics view: one greedy prompt decoded in float32 and in bfloat16 (scripts/record_numerics.py),
where the texts part, each run's top tokens there, and the float32 logit gap at every position."""
from __future__ import annotations

import html
import math

import plotly.graph_objects as go

from .style import COLORS, N_, layout
from .tokens import label

DTYPE_COLORS = {"float32": COLORS["bonus"], "bfloat16": COLORS["resampled"]}


def _text(run: dict, tok: int) -> str:
    return run["token_text"].get(str(tok), f"<{tok}>")


def texts_html(run: dict) -> str:
    """Both answers, the shared part plain and each run's own continuation coloured from where they part."""
    part = run["parts_at"]
    rows = []
    for dtype, toks in run["tokens"].items():
        cut = len(toks) if part is None else part
        same = html.escape("".join(_text(run, t) for t in toks[:cut]))
        own = html.escape("".join(_text(run, t) for t in toks[cut:]))
        rows.append(f'<div style="margin:4px 0"><b>{dtype}</b>: <span style="font-family:monospace;font-size:14px">'
                    f'{same}<span style="background:#fff3bf;color:{DTYPE_COLORS[dtype]};font-weight:600">{own}'
                    '</span></span></div>')
    return "".join(rows)


def top_figure(run: dict, height: int = 300) -> go.Figure:
    """Each run's top tokens at the step where the texts part: a near-tie that rounding flips."""
    tops = run["top_at_part"]
    order = list(dict.fromkeys(t for top in tops.values() for t, _ in top))
    # Standing up and not shrunk to its bar, a near tie's three decimals fit over a bar 16 px wide.
    fig = go.Figure([go.Bar(x=[label(_text(run, t)) for t in order], y=[dict(top).get(t, 0) for t in order],
                            name=dtype, marker_color=DTYPE_COLORS[dtype],
                            text=[f"{dict(top).get(t, 0):.3f}" for t in order], textposition="outside",
                            textangle=-90, constraintext="inside")
                     for dtype, top in tops.items()])
    fig.update_yaxes(title=N_("probability"), range=[0, max(p for top in tops.values() for _, p in top) * 1.3])
    fig.update_xaxes(title=N_("candidates for answer token {n}").format(n=run["parts_at"] + 1))
    return layout(fig, N_("where they part: each run's own top tokens"), height)


def gap(top: list) -> float:
    """The gap between the two best logits, from the top-k probabilities: ln(p1 / p2)."""
    return math.log(top[0][1] / top[1][1]) if len(top) > 1 and top[1][1] > 0 else math.inf


def gaps_figure(run: dict, height: int = 300) -> go.Figure:
    """Every answer position's float32 logit gap; red where bfloat16, re-reading the same text, picks
    another token. Flips sit at the smallest gaps."""
    rows = run["positions"]
    groups = {"bfloat16 agrees": [r for r in rows if r["bf16_token"] == r["token"]],
              "bfloat16 picks another token": [r for r in rows if r["bf16_token"] != r["token"]]}
    colours = {"bfloat16 agrees": "#9ecae1", "bfloat16 picks another token": COLORS["rejected"]}
    fig = go.Figure([go.Scatter(x=[r["pos"] + 1 for r in g], y=[max(r["gap"], 1e-3) for r in g], mode="markers",
                                name=name, marker=dict(color=colours[name], size=9 if "another" in name else 7),
                                hovertext=[f"token {r['pos'] + 1}: {label(_text(run, r['token']))} · gap "
                                           f"{r['gap']:.4f} · bfloat16: {label(_text(run, r['bf16_token']))}"
                                           for r in g], hoverinfo="text")
                     for name, g in groups.items()])
    fig.update_xaxes(title=N_("answer token"))
    fig.update_yaxes(type="log", title=N_("top-1 minus top-2 logit (float32)"))
    return layout(fig, N_("the float32 logit gap at every position"), height)
