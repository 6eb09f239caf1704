"""The draft tree of one step: the pending token as root, each drafted node, and the token
the target added (bonus or resampled) hung where the accepted path ends."""
from __future__ import annotations

import networkx as nx
import plotly.graph_objects as go

from ..traces.trace import Trace
from .style import COLORS, N_, ORIGIN_LABELS, layout
from .tokens import fmt, label

ROOT, FINAL = "root", "final"
# Each kind of node has a shape as well as a colour (no fate is told by colour alone), and the legend names both.
SYMBOLS = {"pending": "square", "accepted": "circle", "rejected": "x", "unreached": "circle-open",
           "resampled": "diamond", "bonus": "diamond", "target": "diamond", "drafted": "circle-dot"}
KIND_NAMES = {"pending": N_("pending token"), "accepted": N_("accepted"), "rejected": N_("rejected"),
              "unreached": N_("never tested"), "resampled": N_("resampled by the target"),
              "bonus": N_("bonus from the target"), "target": N_("the target's own token"),
              "drafted": N_("drafted, not yet verified")}  # predict mode's veiled step (paradec.learn.questions)
GLYPHS = {"square": "■", "circle": "●", "x": "✖", "circle-open": "○", "diamond": "◆", "circle-dot": "◉"}


def pending_token(trace: Trace, i: int) -> int:
    """The last committed token before step i: the verify pass feeds it first."""
    if i == 0:
        return trace.prompt_ids[-1]
    return trace.steps[i - 1].tokens[-1]


def graph(trace: Trace, i: int) -> nx.DiGraph:
    step = trace.steps[i]
    g = nx.DiGraph()
    g.add_node(ROOT, token=pending_token(trace, i), kind="pending")
    for j, n in enumerate(step.nodes):
        g.add_node(j, token=n.token, kind=n.status, node=n)
        g.add_edge(ROOT if n.parent < 0 else n.parent, j)
    if step.tokens and step.origins[-1] != "accepted":  # a clipped step may end on a draft
        g.add_node(FINAL, token=step.tokens[-1], kind=step.origins[-1])
        g.add_edge(step.accepted[-1] if step.accepted else ROOT, FINAL)
    return g


def positions(g: nx.DiGraph) -> dict:
    """A tidy tree: depth on x, leaves stacked on y in draft order, parents centred on their children."""
    pos, leaf = {}, 0
    for v in nx.dfs_postorder_nodes(g, ROOT, sort_neighbors=_draft_order):
        kids = list(g.successors(v))
        if kids:
            y = sum(pos[k][1] for k in kids) / len(kids)
        else:
            y, leaf = -leaf, leaf + 1
        pos[v] = (nx.shortest_path_length(g, ROOT, v), y)
    return pos


def _draft_order(nodes):
    return sorted(nodes, key=lambda v: (v == FINAL, v if isinstance(v, int) else -1))


def _hover(trace: Trace, g: nx.DiGraph, v) -> str:
    d = g.nodes[v]
    head = f"{label(trace.text_of(d['token']))!s}  (id {d['token']})"
    if v == ROOT:
        return head + "<br>pending token: the last one committed, fed first"
    if v == FINAL:
        return head + f"<br>{ORIGIN_LABELS[d['kind']]}: drawn by the target in the same pass"
    n = d["node"]
    lines = [head, f"node {v}, depth {n.depth}: {n.status}", f"p={fmt(n.p)}  q={fmt(n.q)}"]
    if n.accept_prob is not None:
        lines.append(f"min(1,p/q)={fmt(n.accept_prob)}  u={fmt(n.u)}")
    return "<br>".join(lines)


def tree_figure(trace: Trace, i: int, selected: int | None = None, height: int = 300) -> go.Figure:
    return go.Figure(tree_spec(trace, i, selected, height))


def tree_spec(trace: Trace, i: int, selected: int | None = None, height: int = 300) -> dict:
    """Step i's draft tree as plain plotly JSON (the player's frame; tree_figure wraps it for a page)."""
    step = trace.steps[i]
    g = graph(trace, i)
    pos = positions(g)
    on_path = {ROOT, FINAL, *step.accepted}
    data = []
    styles: dict[tuple[bool, bool], tuple[list, list]] = {}  # one trace per edge style (None breaks the line)
    for a, b in g.edges:
        xs, ys = styles.setdefault((a in on_path and b in on_path, b == FINAL), ([], []))
        xs += [pos[a][0], pos[b][0], None]
        ys += [pos[a][1], pos[b][1], None]
    for (hot, final), (xs, ys) in styles.items():
        data.append(dict(type="scatter", x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                         line=dict(color=COLORS["accepted"] if hot else "#bbbbbb", width=5 if hot else 2,
                                   dash="dot" if final else "solid")))
    verts = list(g.nodes)
    data.append(dict(
        type="scatter", x=[pos[v][0] for v in verts], y=[pos[v][1] for v in verts], mode="markers+text",
        text=[short(label(trace.text_of(g.nodes[v]["token"]))) for v in verts],
        textposition=["top center" if pos[v][0] % 2 == 0 and v != FINAL else "bottom center" for v in verts],
        # neighbours' labels above and below in turn (the target's token, under its lower branch: below), so that a
        # phone's narrow tree keeps them apart
        cliponaxis=False,  # the top leaf's label stands over the plot area when its node is the big selected one
        hovertext=[_hover(trace, g, v) for v in verts], hoverinfo="text", showlegend=False,
        customdata=[v if isinstance(v, int) else -1 for v in verts],
        marker=dict(
            size=[28 if v == selected else 20 for v in verts],
            symbol=[SYMBOLS[g.nodes[v]["kind"]] for v in verts],
            color=[COLORS[g.nodes[v]["kind"]] for v in verts],
            line=dict(color=["black" if v == selected else COLORS[g.nodes[v]["kind"]] for v in verts], width=3),
        ),
    ))
    ys = [y for _, y in pos.values()]
    height = max(height, 38 * (max(ys) - min(ys) + 1) + 90)  # a label over each leaf, none on another
    axes = dict(xaxis=dict(title=dict(text=N_("depth (0 = pending token)")), dtick=1, zeroline=False, showgrid=False),
                yaxis=dict(visible=False, range=[min(ys) - 1.3, max(ys) + 0.9]))
    return layout({"data": data, "layout": axes}, height=height)


LABEL_CHARS = 7  # a node's label, at most: longer tokens (<|im_start|>) ran over their neighbours on a phone


def short(text: str) -> str:
    """A node's label: the token, cut with an ellipsis past LABEL_CHARS (its hover shows it whole)."""
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"


LEGEND = "   ".join(f"{GLYPHS[SYMBOLS[k]]} {{{k}}}" for k in ("pending", "accepted", "rejected", "unreached", "target"))


def legend(names: dict[str, str] = KIND_NAMES) -> str:
    """The tree's legend as a line of text (its panel's caption): each kind's symbol and its name (names: the
    words, in the reader's language; the target's own token stands for the bonus and the resampled one too)."""
    return LEGEND.format(**names)
