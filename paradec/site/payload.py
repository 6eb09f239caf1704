"""A recorded trace as a static page loads it: the player's frames (paradec.stage.frames, the app's own) and, apart,
each step's details (the microscope of its default drafted node and the step's KPI charts), in one language. Each is
packed (gzip, then base64) into a small script that hands it to the page (paradec/web/site.js unpacks it): a page
loads only the trace it shows, and the details once they are opened."""
from __future__ import annotations

import base64
import gzip
import json

from ..plots import kpis, microscope
from ..plots.tokens import label
from ..stage import narrate
from ..stage.frames import Shell, default_node, fig_json, frames, panels
from ..traces.trace import Trace
from ..words import Words


def player(trace: Trace, shell: Shell, predict: bool) -> str:
    """The player's data for the whole trace: a line of JSON (steps, boxes), then the frames' JSON (what
    paradec/web/player.js parses)."""
    made = frames(trace, range(len(trace.steps)), shell, predict)
    head = {"n": len(trace.steps), "panels": panels(trace, shell.extra, shell.tr)}
    return _compact(head) + "\n" + _compact(made)


def _microscope(trace: Trace, i: int, tr: Words) -> dict:
    """Step i's microscope at its default node, as the app's details open on it (ui/replay.py)."""
    step, sel = trace.steps[i], default_node(trace, i)
    greedy = trace.sampling.get("temperature", 0) <= 0
    node = step.nodes[sel] if sel is not None else None
    out = {"story": narrate.to_html(narrate.node_story(trace, node, greedy, tr)) if node is not None else ""}
    if node is None or node.p is None:
        fig = microscope.residual_figure(trace, step.last_p_top)
        fig.update_layout(title=tr("target top-k; drawn: {token}").format(token=label(trace.text_of(step.tokens[-1]))))
        return {**out, "figs": {"target": fig_json(fig, tr.lang)}}
    figs = {"p_vs_q": microscope.pq_figure(trace, node)}
    if not greedy and node.accept_prob is not None:  # None: tested without a draw (typical acceptance)
        figs["accept_test"] = microscope.accept_figure(node)
        last_rejected = node.status == "rejected" and not any(n.status == "rejected" for n in step.nodes[sel + 1:])
        if last_rejected and step.residual_top:
            figs["residual"] = microscope.residual_figure(trace, step.residual_top)
    return {**out, "figs": {name: fig_json(f, tr.lang) for name, f in figs.items()}}


def details(trace: Trace, tr: Words) -> str:
    """Every step's details, and the run's tokens-by-position chart once."""
    steps = []
    for i in range(len(trace.steps)):
        kpi = {"tokens": kpis.tokens_figure(trace, i), "time": kpis.time_figure(trace, i)}
        steps.append({**_microscope(trace, i, tr), "kpis": {k: fig_json(f, tr.lang) for k, f in kpi.items()}})
    return _compact({"steps": steps, "positions": fig_json(kpis.position_figure(trace), tr.lang)})


def _compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def script(key: str, text: str) -> str:
    """A script that hands `text` (packed) to the page under `key`: loaded from file:// as a plain script, which a
    page may do where it may not read a file."""
    packed = base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")
    return f"PD.put({json.dumps(key)},\"{packed}\");\n"
