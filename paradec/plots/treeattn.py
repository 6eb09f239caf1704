"""Bars of the KV bytes one tree verify pass reads: per-branch, naive mask, DeFT
(paradec.costs.treeattn in, a plotly figure out)."""
from __future__ import annotations

import math

import plotly.graph_objects as go

from ..costs import treeattn
from ..costs.roofline import ModelShape
from .style import COLORS, N_, layout

METHOD_COLORS = {"per-branch": COLORS["rejected"], "naive mask": COLORS["resampled"], "DeFT": COLORS["accepted"]}


def reads_figure(m: ModelShape, dtype: str, trees: dict[str, list[int]], c: int, q_block: int = treeattn.Q_BLOCK,
                 batch: int = 1, height: int = 320) -> go.Figure:
    """One group of bars per tree (label -> parent list); each bar says how many times DeFT's
    reads it is, and its hover the attention's share of all the bytes the pass moves."""
    m = m.with_dtype(dtype)
    labels = [f"{name}<br>{len(p)} nodes, {len(treeattn.leaf_depths(p))} leaves" for name, p in trees.items()]
    reads = [treeattn.bytes_read(m, p, c, q_block) for p in trees.values()]
    shares = [treeattn.attention_share(m, p, c, q_block, batch) for p in trees.values()]
    # Standing up and not shrunk to its bar, "52.3×" fits over a bar a fifteenth of the chart wide.
    fig = go.Figure([go.Bar(x=labels, y=[r[k] / 1e6 for r in reads], name=k, marker_color=METHOD_COLORS[k],
                            text=[f"{r[k] / r['DeFT']:.3g}×" if k != "DeFT" else "" for r in reads],  # DeFT: 1×
                            textposition="outside",
                            textangle=-90, constraintext="inside",
                            customdata=[s[k] * 100 for s in shares],
                            hovertemplate=f"{k}: %{{y:.4g}} MB<br>%{{customdata:.1f}}% of the pass's bytes "
                                          f"(batch {batch})<extra></extra>")
                     for k in treeattn.METHODS])
    fig.update_layout(barmode="group")
    mb = [r[k] / 1e6 for r in reads for k in treeattn.METHODS]
    # room over the top bar's label
    fig.update_yaxes(type="log", title=N_("KV read per verify pass (MB, one sequence)"),
                     range=[math.log10(min(mb) / 1.5), math.log10(max(mb) * 6)])
    title = N_("{model} ({dtype}), {c:,} cached tokens: KV bytes read by the tree's attention (MODEL)").format(
        model=m.name, dtype=dtype, c=c)
    return layout(fig, title, height)
