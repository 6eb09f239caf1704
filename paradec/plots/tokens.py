"""Token text for labels, and the token stream as HTML (hover shows p, q and min(1, p/q))."""
from __future__ import annotations

import html

from ..core.steps import Step
from ..traces.trace import Trace
from .style import COLORS, MARKS, N_, ORIGIN_LABELS


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


WORDS = {**ORIGIN_LABELS, "by_target": N_("drawn by the target"), "legend": N_("Token stream legend")}
# Each token's details show on hover, and on focus: a keyboard's tab or a finger's tap (spans are focusable).
STREAM_CSS = ("<style>.pd-tok{position:relative;outline-offset:1px;text-underline-offset:3px}"
              ".pd-tok:hover::after,.pd-tok:focus::after{content:attr(data-tip);position:absolute;left:0;bottom:1.6em;"
              "z-index:5;background:#222;color:#fff;font:12px sans-serif;width:max-content;max-width:80vw;"
              "white-space:normal;padding:2px 6px;border-radius:4px}</style>")


def _hover(origin: str, node, p_last: float | None, words: dict) -> str:
    if node is not None:
        parts = [f"p={fmt(node.p)}", f"q={fmt(node.q)}"]
        if node.accept_prob is not None:
            parts += [f"min(1,p/q)={fmt(node.accept_prob)}", f"u={fmt(node.u)}"]
        return f"{words[origin]}: " + ", ".join(parts)
    return f"{words[origin]}: {words['by_target']}" + (f", p={fmt(p_last)}" if p_last is not None else "")


def _span(text: str, origin: str, tip: str, current: bool) -> str:
    style = f"color:{COLORS[origin]};text-decoration:{MARKS[origin]};"
    if origin == "rejected":
        style += "opacity:0.85;"
    if current:
        style += "background:#fff3bf;border-bottom:2px solid #444;"
    body = html.escape(text).replace("\n", "↵<br>")
    tip = html.escape(tip)
    return f'<span class="pd-tok" tabindex="0" data-tip="{tip}" aria-label="{tip}" style="{style}">{body}</span>'


def legend_html(words: dict) -> str:
    """Each fate as the stream draws it: its colour and its line, and its name."""
    items = [f'<span style="color:{COLORS[o]};text-decoration:{MARKS[o]};text-underline-offset:3px;'
             f'font-weight:600">{html.escape(words[o])}</span>' for o in ORIGIN_LABELS]
    return (f'<div role="list" aria-label="{html.escape(words["legend"])}" style="font-size:12px;margin-bottom:4px;'
            f'display:flex;flex-wrap:wrap;gap:0.9em">{"".join(items)}</div>')


def stream_html(trace: Trace, upto: int, show_rejected: bool = True, words: dict | None = None) -> str:
    """The generated text through step `upto` (0-based), each token coloured and marked by origin; show_rejected:
    the current step's rejected draft struck through before the token that replaced it. words: the legend's and
    the details' words (WORDS' keys; the app gives them in the visitor's language)."""
    words = {**WORDS, **(words or {})}
    spans = []
    for step in trace.steps[: upto + 1]:
        current = step.index == trace.steps[upto].index
        p_last = dict((t, p) for t, p in step.last_p_top).get(step.tokens[-1]) if step.tokens else None
        for c in committed(step):
            if c["origin"] != "accepted" and show_rejected and current:
                for n in rejected_nodes(step):
                    spans.append(_span(trace.text_of(n.token), "rejected", _hover("rejected", n, None, words), current))
            spans.append(_span(trace.text_of(c["token"]), c["origin"], _hover(c["origin"], c["node"], p_last, words),
                               current))
    body = "".join(spans)
    return (
        STREAM_CSS + legend_html(words)
        # column-reverse keeps the newest tokens in view without any script
        + '<div style="display:flex;flex-direction:column-reverse;max-height:170px;overflow-y:auto;'
        'border:1px solid #ddd;border-radius:6px;padding:8px">'
        f'<div style="font-family:monospace;font-size:15px;line-height:1.7;white-space:pre-wrap">{body}</div></div>'
    )
