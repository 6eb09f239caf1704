"""The two workers' timeline (a Gantt chart): when the draft drafted and the target verified,
on the run's own clock. Any trace has one (each step's start, draft and verify times); a mirror
trace adds the worker's drafting during the verify passes. Pure trace -> figure builders."""
from __future__ import annotations

import statistics

import plotly.graph_objects as go

from ..core import records
from ..core.steps import Step
from ..traces.trace import Trace
from .style import COLORS, N_, layout

DRAFT, TARGET = "draft worker", "target worker"
KINDS = {  # kind -> (legend label, colour)
    "draft": ("drafting (the target waits)", COLORS["resampled"]),
    "wait": ("waiting for the worker", COLORS["unreached"]),
    "verify": ("verify pass", COLORS["bonus"]),
    "hit": ("drafting during verify: used", COLORS["accepted"]),
    "miss": ("drafting during verify: thrown away", COLORS["rejected"]),
}


def intervals(trace: Trace) -> list[dict]:
    """Every timed interval: worker, kind, start and end (ms from the run's start), step index."""
    out = []
    for i, s in enumerate(trace.steps):
        bet = _bet(s)
        waited = min(bet.wait_ms, s.draft_ms)
        verify = s.start_ms + s.draft_ms
        if waited > 0:
            out.append(_iv(DRAFT, "wait", s.start_ms, s.start_ms + waited, i))
        if not bet.hit:  # on a hit the chain was ready: propose() only handed it over
            out.append(_iv(DRAFT, "draft", s.start_ms + waited, verify, i))
        out.append(_iv(TARGET, "verify", verify, verify + s.verify_ms, i))
        if bet.prefetch is not None:  # drafted during the previous step's verify pass
            a, b = bet.prefetch
            out.append(_iv(DRAFT, "hit" if bet.hit else "miss", a, b, i - 1))
    return out


def _bet(s: Step) -> records.Mirror:
    """A mirror step's record; for another method's step, one with no worker round."""
    return s.record if isinstance(s.record, records.Mirror) else records.Mirror()


def _iv(worker: str, kind: str, start: float, end: float, step: int) -> dict:
    return {"worker": worker, "kind": kind, "start": start, "end": max(start, end), "step": step}


def gantt_figure(trace: Trace, title: str, steps: range | None = None, height: int = 210,
                 until_ms: float | None = None) -> go.Figure:
    """Two lanes (draft worker above, target worker below); `steps` limits the window; until_ms
    fixes the time axis (two runs compared on one scale)."""
    ivs = [v for v in intervals(trace) if steps is None or v["step"] in steps]
    fig = go.Figure()
    for kind, (label, color) in KINDS.items():
        rows = [v for v in ivs if v["kind"] == kind]
        if rows:
            fig.add_bar(y=[v["worker"] for v in rows], x=[v["end"] - v["start"] for v in rows],
                        base=[v["start"] for v in rows], orientation="h", name=label, marker_color=color,
                        customdata=[[v["step"], v["start"], v["end"]] for v in rows],
                        hovertemplate=f"{label}<br>step %{{customdata[0]}}: "
                                      "%{customdata[1]:.1f}–%{customdata[2]:.1f} ms"
                                      "<extra></extra>")
    fig.update_layout(barmode="overlay", bargap=0.35)
    fig.update_yaxes(categoryorder="array", categoryarray=[TARGET, DRAFT])
    fig.update_xaxes(title=N_("ms from the start of the run"), range=[0, until_ms] if until_ms else None)
    return layout(fig, title, height)


def end_ms(trace: Trace, steps: range) -> float:
    """When the last interval of these steps ends."""
    return max((v["end"] for v in intervals(trace) if v["step"] in steps), default=0.0)


def summary(trace: Trace) -> dict:
    """What overlapping bought: time on the critical path vs drafting hidden behind verify passes."""
    ivs = intervals(trace)
    total = lambda kinds: round(sum(v["end"] - v["start"] for v in ivs if v["kind"] in kinds))  # noqa: E731
    bets = [_bet(s).hit for s in trace.steps if _bet(s).hit is not None]
    return {
        "run": "parallel" if trace.params.get("parallel") else "sequential",
        "tokens": trace.new_tokens, "target forwards": len(trace.steps), "τ": round(trace.tau, 2),
        "tokens/s": round(trace.new_tokens / trace.wall_s, 1) if trace.wall_s else None,
        "wall ms": round(trace.wall_s * 1e3), "verify ms": total({"verify"}),
        "verify ms / pass (median)": (round(statistics.median(s.verify_ms for s in trace.steps), 1)
                                      if trace.steps else None),
        "drafting, target waits (ms)": total({"draft", "wait"}),
        "drafting during verify (ms)": total({"hit", "miss"}),
        "bets won": f"{sum(bets)}/{len(bets)}" if bets else "-",
    }
