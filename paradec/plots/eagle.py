"""EAGLE's own views of a trace: the draft tree growing depth by depth (expand), then reranked
(kept or cut by cumulative confidence), the cut candidates and why, acceptance per depth,
and several runs (EAGLE-1, -2, -3) compared on one prompt.

An EAGLE step's record (paradec.core.records.Eagle) holds every candidate the head drafted, parents
before children (records.Candidate: token, parent candidate (-1: the pending token), depth, score
(cumulative draft log-probability), rank among its parent's children, expanded (fed to the head for
children), kept (verified)). The kept candidates are step.nodes, renumbered in the same order."""
from __future__ import annotations

import math
from typing import NamedTuple

import plotly.graph_objects as go

from ..core import records
from ..traces.trace import Trace, rounded
from .arena import bars_figure, finish_times, length_histogram
from .style import COLORS, N_, label_room, layout
from .tokens import label
from .tree import pending_token

# What a candidate looks like in a frame: growing (expanded or not), then reranked.
STATES = {"expanded": "#1f77b4", "not expanded": "#9ecae1", "accepted": COLORS["accepted"],
          "kept": "#1f77b4", "cut": "#c9c9c9"}
STATE_NAMES = {"expanded": N_("expanded"), "not expanded": N_("not expanded"), "accepted": N_("accepted"),
               "kept": N_("kept"), "cut": N_("cut")}  # the legend's words (the app translates them)


class Candidate(NamedTuple):
    """A drafted candidate (records.Candidate) with its index among the step's candidates."""
    index: int
    token: int
    parent: int
    depth: int
    score: float  # cumulative draft log-probability: log of the product of q along the path
    rank: int
    expanded: bool
    kept: bool

    @property
    def confidence(self) -> float:
        return math.exp(self.score)


def candidates(trace: Trace, i: int) -> list[Candidate]:
    record = trace.steps[i].record
    drafted = record.drafted if isinstance(record, records.Eagle) else None
    return [Candidate(j, c.token, c.parent, c.depth, c.score, c.rank, c.expanded, c.kept)
            for j, c in enumerate(drafted or ())]


def kept_nodes(cands: list[Candidate]) -> dict[int, int]:
    """Candidate index -> its node index in step.nodes (= its mask row - 1)."""
    return {c.index: n for n, c in enumerate(c for c in cands if c.kept)}


def accepted_candidates(trace: Trace, i: int) -> set[int]:
    """The candidates on the accepted path."""
    order = [c.index for c in candidates(trace, i) if c.kept]
    return {order[a] for a in trace.steps[i].accepted if a < len(order)}


def lookup_outcome(trace: Trace, i: int) -> str | None:
    """Which branch step i's accepted path took, when a prompt-lookup branch was verified beside the tree
    (records.Eagle.looked_up): "copy" (it went on past the head's tree, on nodes only the copy had), "both"
    (the head had drafted the same tokens), "head" (off the copied branch), or None (no branch this step)."""
    step = trace.steps[i]
    branch = step.record.looked_up if isinstance(step.record, records.Eagle) else []
    if not branch:
        return None
    kept = sum(c.kept for c in candidates(trace, i))  # the head's nodes; the copy's own come after them
    if any(a >= kept for a in step.accepted):
        return "copy"
    return "both" if step.accepted and set(step.accepted) <= set(branch) else "head"


def lookup_story(trace: Trace, i: int) -> str | None:
    """Step i's prompt-lookup branch in one sentence (None: none this step)."""
    outcome = lookup_outcome(trace, i)
    if outcome is None:
        return None
    step = trace.steps[i]
    branch = [step.nodes[n].token for n in step.record.looked_up]
    took = {"copy": "the target followed it past the head's tree: the copy won this step",
            "both": "the head had drafted the same tokens the target took", "head": "the target took the head's tree"}
    copied = "".join(trace.text_of(t) for t in branch)
    return (f"Prompt-lookup branch: {len(branch)} copied token(s), “{label(copied)}”, verified beside the tree; "
            f"{took[outcome]}.")


def lookup_tally(trace: Trace) -> dict[str, int]:
    """Over the run: steps with a copied branch, and how many of each outcome (lookup_outcome)."""
    outcomes = [o for o in (lookup_outcome(trace, i) for i in range(len(trace.steps))) if o]
    return {"steps": len(outcomes), **{k: outcomes.count(k) for k in ("copy", "both", "head")}}


def threshold(cands: list[Candidate]) -> float | None:
    """The lowest kept confidence: the rerank kept the candidates at or above it."""
    return min((c.confidence for c in cands if c.kept), default=None)


def depth_counts(cands: list[Candidate]) -> list[dict]:
    """Per depth: candidates drafted, expanded (fed to the head), kept and cut by the rerank."""
    deepest = max((c.depth for c in cands), default=0)
    rows = []
    for d in range(1, deepest + 1):
        at = [c for c in cands if c.depth == d]
        kept = sum(c.kept for c in at)
        rows.append({"depth": d, "drafted": len(at), "expanded": sum(c.expanded for c in at), "kept": kept,
                     "cut": len(at) - kept})
    return rows


def visible(cands: list[Candidate], upto_depth: int | None) -> list[Candidate]:
    """The candidates drafted by the time depth upto_depth was (None: all, the rerank frame)."""
    return [c for c in cands if upto_depth is None or c.depth <= upto_depth]


def positions(cands: list[Candidate]) -> dict[int, tuple[int, float]]:
    """x = depth; within a depth, children follow their parent's order, then their rank, so
    edges never cross; every depth is centred on y = 0. The pending token (-1) sits at (0, 0)."""
    pos, order = {-1: (0, 0.0)}, {-1: 0}
    for d in range(1, max((c.depth for c in cands), default=0) + 1):
        layer = sorted((c for c in cands if c.depth == d), key=lambda c: (order[c.parent], c.rank))
        for k, c in enumerate(layer):
            order[c.index] = k
            pos[c.index] = (d, (len(layer) - 1) / 2 - k)
    return pos


def state(c: Candidate, upto_depth: int | None, accepted: set[int]) -> str:
    if upto_depth is None:
        return "accepted" if c.index in accepted else "kept" if c.kept else "cut"
    return "expanded" if c.expanded else "not expanded"


def _hover(trace: Trace, c: Candidate, by_index: dict[int, Candidate], nodes: dict[int, int]) -> str:
    parent = by_index.get(c.parent)
    q = math.exp(c.score - (parent.score if parent else 0.0))  # this token's own draft probability
    fate = (f"kept: node {nodes[c.index]}, mask row {nodes[c.index] + 1}" if c.kept
            else "cut by the rerank (below the kept confidence)")
    return "<br>".join([
        f"{label(trace.text_of(c.token))}  (id {c.token}), candidate {c.index}",
        f"depth {c.depth}, rank {c.rank} among its parent's children",
        f"q = {q:.3f}; cumulative confidence exp(score) = {c.confidence:.4f}",
        "expanded: fed to the head for children" if c.expanded else "not expanded: no children drafted",
        fate,
    ])


def _edges(pos: dict, shown: list[Candidate], hot: set[int]) -> list[dict]:
    """Grey edges to every shown candidate, green ones along the accepted path."""
    out = []
    for colour, width, group in [("#cccccc", 1.5, [c for c in shown if c.index not in hot]),
                                 (COLORS["accepted"], 4, [c for c in shown if c.index in hot])]:
        xs, ys = [], []
        for c in group:
            xs += [pos[c.parent][0], pos[c.index][0], None]
            ys += [pos[c.parent][1], pos[c.index][1], None]
        out.append(dict(type="scatter", x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                        line=dict(color=colour, width=width)))
    return out


def growth_figure(trace: Trace, i: int, upto_depth: int | None = None, height: int | None = None) -> go.Figure:
    return go.Figure(growth_spec(trace, i, upto_depth, height))


def growth_spec(trace: Trace, i: int, upto_depth: int | None = None, height: int | None = None) -> dict:
    """Step i's candidates by depth, as plain plotly JSON (the player's frame). upto_depth = d: the tree as
    drafted up to depth d (dark: expanded, i.e. among the top_k by confidence and fed to the head); None: the
    rerank, every candidate kept or cut by its cumulative confidence, the accepted path in green."""
    cands = candidates(trace, i)
    pos, shown = positions(cands), visible(cands, upto_depth)
    accepted = accepted_candidates(trace, i) if upto_depth is None else set()
    by_index, nodes = {c.index: c for c in cands}, kept_nodes(cands)
    data = _edges(pos, shown, accepted)
    data.append(dict(type="scatter", x=[0], y=[0], mode="markers+text", name=N_("pending"),
                     text=[label(trace.text_of(pending_token(trace, i)))], textposition="middle left",
                     marker=dict(symbol="square", size=18, color=COLORS["pending"]),
                     hovertext=["the pending token: the last one committed"], hoverinfo="text"))
    for name in ("expanded", "not expanded") if upto_depth is not None else ("accepted", "kept", "cut"):
        group = [c for c in shown if state(c, upto_depth, accepted) == name]
        data.append(dict(
            type="scatter", x=[pos[c.index][0] for c in group], y=[pos[c.index][1] for c in group],
            mode="markers+text", name=STATE_NAMES[name], text=[label(trace.text_of(c.token)) for c in group],
            textposition="middle right", textfont=dict(size=11),
            hovertext=[_hover(trace, c, by_index, nodes) for c in group], hoverinfo="text",
            customdata=[nodes.get(c.index, -1) for c in group],
            marker=dict(color=STATES[name], size=[8 + 16 * math.sqrt(c.confidence) for c in group],
                        symbol="x" if name == "cut" else "circle",
                        line=dict(color="black", width=[1.5 * c.expanded for c in group])),
        ))
    widest = max((r["drafted"] for r in depth_counts(cands)), default=1)
    deepest = max((c.depth for c in cands), default=1)
    axes = dict(xaxis=dict(title=dict(text=N_("depth (0 = pending token)")), dtick=1, range=[-0.9, deepest + 0.8],
                           showgrid=False, zeroline=False),
                yaxis=dict(visible=False, range=[-(widest + 1) / 2, (widest + 1) / 2]))
    fig = layout({"data": data, "layout": axes}, _title(cands, upto_depth), height or max(300, 90 + 26 * widest))
    return label_room(fig, [label(trace.text_of(c.token)) for c in shown if c.depth == deepest],
                      [label(trace.text_of(pending_token(trace, i)))])


def _title(cands: list[Candidate], upto_depth: int | None) -> str:
    if not cands:
        return N_("nothing drafted this step")
    if upto_depth is not None:
        return N_("expand: drafted up to depth {depth}, {n} candidates").format(
            depth=upto_depth, n=len(visible(cands, upto_depth)))
    return N_("rerank: {kept} of {total} kept (confidence ≥ {threshold:.3g})").format(
        kept=sum(c.kept for c in cands), total=len(cands), threshold=threshold(cands))


def cut_rows(trace: Trace, i: int) -> list[dict]:
    """One row per candidate the rerank cut, with why; and whether its children were drafted
    (only an expanded candidate has any: the others were outside their depth's top_k)."""
    cands = candidates(trace, i)
    thr, deepest = threshold(cands), max((c.depth for c in cands), default=0)
    by_index = {c.index: c for c in cands}
    rows = []
    for c in cands:
        if c.kept:
            continue
        parent = by_index.get(c.parent)
        why = (f"confidence {c.confidence:.4f} < kept threshold {thr:.4f}" if thr is None or c.confidence < thr
               else "tied with the threshold: ties go to the shallower, earlier candidate")
        children = ("drafted (they score no higher)" if c.expanded else "none: last depth" if c.depth == deepest
                    else "never drafted: not expanded")
        rows.append({"candidate": c.index, "token": label(trace.text_of(c.token)), "depth": c.depth, "rank": c.rank,
                     "parent": label(trace.text_of(parent.token)) if parent else "(pending)",
                     "confidence": round(c.confidence, 4), "why cut": why, "its children": children})
    return rows


def depth_acceptance(trace: Trace) -> list[dict]:
    """Per depth d, Trace.depth_acceptance's α_d: of the steps whose accepted path reached depth d-1 and
    tested a child there, how many accepted one (the chance to go one deeper)."""
    return [{"depth": d, "tested": n, "accepted": a, "rate": a / n} for d, n, a in trace.depth_acceptance()]


def depth_acceptance_figure(trace: Trace, height: int = 260) -> go.Figure:
    rows = depth_acceptance(trace)
    fig = go.Figure(go.Bar(x=[r["depth"] for r in rows], y=[r["rate"] for r in rows], marker_color=COLORS["accepted"],
                           text=[f"{r['accepted']}/{r['tested']}" for r in rows], textposition="outside",
                           hovertemplate="depth %{x}: %{text} accepted (%{y:.0%})<extra></extra>"))
    fig.update_xaxes(title=N_("depth d"), dtick=1)
    fig.update_yaxes(range=[0, 1.15], tickformat=".0%", title=N_("accepted | tested (path reached d−1)"))
    return layout(fig, N_("accepted at depth d, given the path reached d−1") if rows
                  else "acceptance per depth: nothing was drafted", height)


def tokens_per_s(trace: Trace) -> float:
    """From the measured step times (draft + verify), the prefill included."""
    ends = finish_times(trace)
    return 1e3 * trace.new_tokens / ends[-1] if ends and ends[-1] else 0.0


def compare_rows(traces: dict[str, Trace]) -> list[dict]:
    """One row per run: τ, acceptance, speed from its step times, and where a step's time goes."""
    rows = []
    for name, t in traces.items():
        drafted = [s for s in t.steps if s.nodes] or t.steps
        rows.append({"run": name, "τ": round(t.tau, 2), "acceptance": rounded(t.acceptance, 3),
                     "tokens / s": round(tokens_per_s(t), 1),
                     "draft ms / step": round(sum(s.draft_ms for s in drafted) / len(drafted), 1),
                     "verify ms / step": round(sum(s.verify_ms for s in drafted) / len(drafted), 1),
                     "tokens verified / step": round(sum(s.verified for s in drafted) / len(drafted), 1),
                     "head passes / step": round(sum(s.draft_forwards for s in drafted) / len(drafted), 1)})
    return rows


def time_split_figure(traces: dict[str, Trace], height: int = 260) -> go.Figure:
    """Measured ms per committed token, split into drafting (the head) and verifying (the target)."""
    names = list(traces)
    per_token = {m: max(1, traces[m].new_tokens) for m in names}
    fig = go.Figure([
        go.Bar(y=names, x=[sum(s.draft_ms for s in traces[m].steps) / per_token[m] for m in names], orientation="h",
               name=N_("draft (head)"), marker_color=COLORS["resampled"]),
        go.Bar(y=names, x=[sum(s.verify_ms for s in traces[m].steps) / per_token[m] for m in names], orientation="h",
               name=N_("verify (target)"), marker_color=COLORS["bonus"]),
    ])
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title=N_("ms / token"))
    fig.update_yaxes(autorange="reversed")
    return layout(fig, N_("where the time goes"), height)


def compare_figures(traces: dict[str, Trace]) -> dict[str, go.Figure]:
    return {"tau": bars_figure({m: t.tau for m, t in traces.items()}, "τ: tokens per target forward"),
            "speed": bars_figure({m: tokens_per_s(t) for m, t in traces.items()}, "tokens / s (step times)", "{:.1f}"),
            "lengths": length_histogram(traces), "time": time_split_figure(traces)}
