"""Token text for labels, and the token stream as HTML (hover shows p, q and min(1, p/q))."""
from __future__ import annotations

import html

from ..core.steps import Step
from ..traces.trace import Trace
from .style import COLORS, ORIGIN_LABELS


def label(text: str) -> str:
    """Make whitespace visible: a token that is a space or a newline must still show."""
    return text.replace("\n", "↵").replace("\t", "⇥").replace(" ", "·") or "∅"


def fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def committed(step: Step) -> list[dict]:
    """Each token committed in a step with its origin and the acceptance numbers behind it."""
    out = []
    for k, (tok, origin) in enumerate(zip(step.tokens, step.origins)):
        node = step.nodes[step.accepted[k]] if origin == "accepted" else None
        out.append({"token": tok, "origin": origin, "node": node})
    return out


def rejected_nodes(step: Step) -> list:
    """The draft the target turned down where the step's own token went: the first rejected child of the
    last accepted node (or of the pending token). One per step, so a wide tree keeps the stream readable."""
    parent = step.accepted[-1] if step.accepted else -1
    return [n for n in step.nodes if n.status == "rejected" and n.parent == parent][:1]


def _hover(origin: str, node, p_last: float | None) -> str:
    if node is not None:
        parts = [f"p={fmt(node.p)}", f"q={fmt(node.q)}"]
        if node.accept_prob is not None:
            parts += [f"min(1,p/q)={fmt(node.accept_prob)}", f"u={fmt(node.u)}"]
        return f"{ORIGIN_LABELS[origin]}: " + ", ".join(parts)
    return f"{ORIGIN_LABELS[origin]}: drawn by the target" + (f", p={fmt(p_last)}" if p_last is not None else "")


def _span(text: str, origin: str, title: str, current: bool) -> str:
    style = f"color:{COLORS[origin]};"
    if origin == "rejected":
        style += "text-decoration:line-through;opacity:0.75;"
    if current:
        style += "background:#fff3bf;border-bottom:2px solid #444;"
    body = html.escape(text).replace("\n", "↵<br>")
    return f'<span title="{html.escape(title)}" style="{style}">{body}</span>'


def stream_html(trace: Trace, upto: int, show_rejected: bool = True) -> str:
    """The generated text through step `upto` (0-based), each token coloured by origin; show_rejected:
    the current step's rejected draft struck through before the token that replaced it."""
    spans = []
    for step in trace.steps[: upto + 1]:
        current = step.index == trace.steps[upto].index
        p_last = dict((t, p) for t, p in step.last_p_top).get(step.tokens[-1]) if step.tokens else None
        for c in committed(step):
            if c["origin"] != "accepted" and show_rejected and current:
                for n in rejected_nodes(step):
                    spans.append(_span(trace.text_of(n.token), "rejected", _hover("rejected", n, None), current))
            spans.append(_span(trace.text_of(c["token"]), c["origin"], _hover(c["origin"], c["node"], p_last), current))
    legend = " ".join(
        f'<span style="color:{COLORS[o]};font-weight:600">■ {ORIGIN_LABELS[o]}</span>' for o in ORIGIN_LABELS
    )
    body = "".join(spans)
    return (
        f'<div style="font-size:12px;margin-bottom:4px">{legend}</div>'
        # column-reverse keeps the newest tokens in view without any script
        f'<div style="display:flex;flex-direction:column-reverse;max-height:170px;overflow-y:auto;'
        f'border:1px solid #ddd;border-radius:6px;padding:8px">'
        f'<div style="font-family:monospace;font-size:15px;line-height:1.6;white-space:pre-wrap">{body}</div></div>'
    )
