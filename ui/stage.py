"""What the browser's player animates (paradec/web/player.js): for every step of a trace, the step's story,
the token stream and the stage's figures (the draft tree, the attention mask and a method's own
per-step figure), precomputed once per trace and sent as JSON."""
from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import plotly.graph_objects as go
import streamlit as st
from plotly.utils import PlotlyJSONEncoder

from paradec.learn import questions
from paradec.plots import kpis
from paradec.plots.lookahead import window_cells
from paradec.plots.mask import mask_spec
from paradec.plots.style import FROM_RUN, TEMPLATE
from paradec.plots.tokens import stream_html
from paradec.plots.tree import KIND_NAMES, legend, tree_spec
from paradec.traces.trace import Trace

from . import figure_text, learn, narrate
from .i18n import N_, _, lang
from .style import BADGE_TEXT, MEANING

WINDOW = 64  # steps drawn ahead at once: every step of a recorded trace, a block of a long live one
Figures = Callable[[Trace, int], dict[str, go.Figure | dict | str]]  # a method's own panels at step i: figures
# (or figures as plain JSON) or HTML


@dataclass(frozen=True)
class Panel:
    """One box of the stage: a figure (or HTML) with its title, honesty labels and help. Title, help and caption
    are the English (marked N_ where defined): spec() gives them in the visitor's language."""
    name: str
    title: str
    help: str
    width: float = 1.0
    labels: tuple[str, ...] = (FROM_RUN,)
    caption: str = ""
    html: bool = False

    def spec(self) -> dict:
        badges = [{"kind": x.replace(" ", "_"), "text": _(BADGE_TEXT[x]), "help": _(MEANING[x])} for x in self.labels]
        return {"name": self.name, "title": _(self.title), "help": _(self.help), "width": self.width,
                "badges": badges, "caption": _(self.caption), "html": self.html}


@dataclass(frozen=True)
class Extra:
    """A method's own animated panels: their boxes (rows), the function that draws them, and a line of
    markdown the method adds to each step's story."""
    rows: list[list[Panel]] = field(default_factory=list)
    figures: Figures | None = None
    story: Callable[[Trace, int], str] | None = None


STREAM = Panel("stream", N_("Token stream"), N_("The answer so far, each token coloured by how it was committed "
               "(legend on top); the highlighted tokens are this step's. Struck through: this step's rejected "
               "draft."), html=True)
TREE = Panel("tree", N_("Draft tree (accepted path in bold)"), N_("Every token drafted this step, hanging off the "
             "pending token (the square, depth 0). Accepted: a green disc; rejected: a red cross; never tested: a grey "
             "ring (the legend under the tree names them). The bold path is what the target kept; the diamond is its "
             "own token after it."))  # its caption, the legend, is built in the reader's language (rows)
MASK_HELP = N_("Which token of the verify pass may look at which (✓ on green = may attend). Each drafted token sees "
               "the context and its own ancestors only, so one forward pass checks every branch at once.")
MASK_CAPTION = N_("✓ on green: may attend · blank: blocked · first column: the context. Hover a cell: who sees "
                  "what, and why.")
WINDOW_CAPTION = N_("Green: may attend · grey: blocked · dashed: the two branches. Hover a cell: who sees what, and "
                    "why. Window rows (L level, c column) see only their own trajectory: they ride along to grow the "
                    "n-gram pool and are never accepted.")


def fig_json(fig: go.Figure | dict) -> dict:
    """A frame's figure as plain JSON, its words in the visitor's language: a go.Figure converted, a figure built as
    a dict (tree_spec) as it is."""
    if isinstance(fig, dict):
        return figure_text.translated({**fig, "data": lines_merged(fig["data"])})
    d = fig.to_plotly_json()
    d["layout"].pop("template", None)  # sent once for all frames
    d = json.loads(json.dumps(d, cls=PlotlyJSONEncoder))  # numpy arrays and the like, as plain JSON
    d["data"] = lines_merged(d["data"])
    return figure_text.translated(d)


LINE = {"type", "mode", "x", "y", "line", "hoverinfo", "showlegend"}  # a line trace that is only a line


def lines_merged(data: list[dict]) -> list[dict]:
    """Line traces drawn alike (no hover, no legend) as one, their segments parted by gaps, where the first
    was: plotly lays out each trace apart, and a tree drawn one trace per edge took half as long again."""
    out, kept = [], {}
    for t in data:
        bare = t.get("mode") == "lines" and t.get("hoverinfo") == "skip" and t.get("showlegend") is False
        if not bare or set(t) - LINE:
            out.append(t)
            continue
        like = json.dumps({k: v for k, v in t.items() if k not in ("x", "y")}, sort_keys=True)
        if like in kept:
            kept[like]["x"] += [None, *t["x"]]
            kept[like]["y"] += [None, *t["y"]]
        else:
            kept[like] = {**t, "x": list(t["x"]), "y": list(t["y"])}
            out.append(kept[like])
    return out


def frame(trace: Trace, i: int, show_rejected: bool, extra: Extra, selected: int | None = None,
          predict: bool = False) -> dict:
    """Step i's frame: its story, token stream and figures. predict: with the step's question, if it has one, and
    the step as proposed ("pre"), which the player shows until the question is answered; the frame itself then
    highlights the outcome (the question's node, unless one was picked below)."""
    asked = questions.ask(trace, i) if predict else None
    if asked:
        selected = asked["node"] if selected is None else selected
    shown = _frame(trace, i, show_rejected, extra, selected)
    if asked:
        veiled = questions.veiled(trace, i)
        shown["ask"] = learn.question(asked)
        story = narrate.before_story(trace, i)
        shown["pre"] = {"story": narrate.to_html(story),
                        "alt": {"tree": narrate.plain(story), "mask": narrate.mask_alt(trace, i)},
                        "html": {"stream": stream_html(veiled, i, show_rejected, figure_text.stream_words())},
                        "figs": {"tree": fig_json(tree_spec(veiled, i)), "mask": fig_json(mask_spec(veiled, i))}}
    return shown


def _frame(trace: Trace, i: int, show_rejected: bool, extra: Extra, selected: int | None) -> dict:
    s = trace.steps[i]
    kpi = _("running τ <b>{tau:.2f}</b> · this step: <b>{n}</b> token(s) for one target forward · draft "
            "{draft:.0f} ms, verify {verify:.0f} ms (MEASURED)").format(
        tau=kpis.running_tau(trace, i), n=len(s.tokens), draft=s.draft_ms, verify=s.verify_ms)
    kpi = f"<div class='pd-kpi'>{kpi}</div>"
    figs = {"tree": tree_spec(trace, i, selected), "mask": mask_spec(trace, i, selected)}
    html = {"stream": stream_html(trace, i, show_rejected, figure_text.stream_words())}
    for name, f in (extra.figures(trace, i) if extra.figures else {}).items():
        (html if isinstance(f, str) else figs)[name] = f
    story = narrate.step_story(trace, i) + (" " + extra.story(trace, i) if extra.story else "")
    alt = {name: narrate.plain(story) for name in figs} | {"tree": narrate.tree_alt(trace, i),
                                                          "mask": narrate.mask_alt(trace, i)}
    return {"story": narrate.to_html(story) + kpi, "html": html, "alt": alt,
            "figs": {name: fig_json(f) for name, f in figs.items()}}


def _frames(key: str, _owner: object, _make: Callable[[], list[dict]]) -> tuple[object, str]:
    return _owner, json.dumps(_make(), separators=(",", ":"))


@functools.cache
def _cached(spinner: str):
    """The frames' cache, saying `spinner` while it fills: one per language for what it says, one store for all
    (streamlit names a cache by its function's code)."""
    return st.cache_resource(max_entries=24, show_spinner=spinner)(_frames)


def frames_json(key: str, owner: object, make: Callable[[], list[dict]]) -> str:
    """make()'s frames as JSON, computed once per key and language (the frames' words are the visitor's). The
    key names `owner` (a trace, by id and size): the owner is kept beside its frames, so an object that reuses a
    freed id is drawn afresh."""
    kept, frames = _cached(_("Preparing every step for the player…"))(f"{key}:{lang()}", owner, make)
    return frames if kept is owner else json.dumps(make(), separators=(",", ":"))


@functools.cache
def template() -> str:
    """The figures' plotly template, sent once for every frame."""
    return json.dumps(json.loads(go.Figure(layout={"template": TEMPLATE}).to_json())["layout"]["template"])


def rows(trace: Trace, extra: Extra) -> list[list[Panel]]:
    window = any(window_cells(s) for s in trace.steps)  # a combined mask has more columns
    mask = Panel("mask", N_("Combined attention mask of the verify pass") if window else
                 N_("Attention mask of the verify pass (draft block)"), MASK_HELP, 1.8 if window else 1.0,
                 caption=WINDOW_CAPTION if window else MASK_CAPTION)
    tree = dataclasses.replace(TREE, caption=legend({kind: _(name) for kind, name in KIND_NAMES.items()}))
    return [[STREAM], [tree, mask], *extra.rows]


def window(i: int, n: int) -> range:
    """The steps whose frames go to the browser with step i (0-based): all of a short trace, a block of a long one."""
    lo = i // WINDOW * WINDOW
    return range(lo, min(n, lo + WINDOW))


def shared(frames: list[dict]) -> list[dict]:
    """A figure the same as the step before's goes as null: the browser keeps the one it drew (and skips a redraw)."""
    last: dict = {}
    for f in frames:
        for name, fig in f["figs"].items():
            if last.get(name) == fig:
                f["figs"][name] = None
            else:
                last[name] = fig
    return frames


def build(trace: Trace, ns: str, show_rejected: bool, extra: Extra, i: int, selected: int | None,
          predict: bool = False) -> dict:
    """The player's data: frames for the steps around step i (cached per trace), the boxes, and step i's
    frame redrawn with the node picked below highlighted. predict: frames with their questions (predict mode)."""
    steps = window(i, len(trace.steps))
    key = (f"{ns}:{id(trace)}:{trace.method}:{len(trace.steps)}:{trace.wall_s}:{show_rejected}:{steps.start}"
           f"{':predict' if predict else ''}")
    frames = frames_json(key, trace, lambda: shared([frame(trace, k, show_rejected, extra, predict=predict)
                                                     for k in steps]))
    return {"key": key, "frames": frames, "template": template(), "offset": steps.start, "n": len(trace.steps),
            "panels": [[p.spec() for p in row] for row in rows(trace, extra)],
            "override": frame(trace, i, show_rejected, extra, selected, predict) if selected is not None else None}
