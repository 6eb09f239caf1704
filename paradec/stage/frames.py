"""What the browser's step player animates (paradec/web/player.js): for every step of a trace, the step's story, the
token stream and the stage's figures (the draft tree, the attention mask and a method's own per-step figure), as
plain JSON in one language. The app sends them to its player component (ui/stage.py), the static site writes them
into its pages (paradec.site): the same frames, the same player."""
from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import plotly.graph_objects as go
from plotly.utils import PlotlyJSONEncoder

from ..learn import questions
from ..plots import kpis
from ..plots.lookahead import window_cells
from ..plots.mask import mask_spec
from ..plots.style import FROM_RUN, MEASURED, MODEL, TEMPLATE
from ..plots.tokens import stream_html
from ..plots.tree import KIND_NAMES, legend, tree_spec
from ..traces.trace import Trace
from ..words import N_, Words
from . import figure_text, narrate
from .learn import Link, question

Figures = Callable[[Trace, int], dict[str, go.Figure | dict | str]]  # a method's own panels at step i: figures
# (or figures as plain JSON) or HTML
BADGE_TEXT = {MEASURED: N_("MEASURED"), FROM_RUN: N_("FROM RUN"), MODEL: N_("MODEL")}  # translated where shown
MEANING = {  # translated where shown
    MEASURED: N_("timed in this run"),
    FROM_RUN: N_("derived from the recorded trace"),
    MODEL: N_("analytic formula, not measured"),
}


@dataclass(frozen=True)
class Panel:
    """One box of the stage: a figure (or HTML) with its title, honesty labels and help. Title, help and caption
    are the English (marked N_ where defined), a title with {fields} filled from `values`: spec() gives them in a
    language."""
    name: str
    title: str
    help: str
    width: float = 1.0
    labels: tuple[str, ...] = (FROM_RUN,)
    caption: str = ""
    html: bool = False
    values: tuple[tuple[str, object], ...] = ()  # the title's {fields}

    def spec(self, tr: Words) -> dict:
        badges = [{"kind": x.replace(" ", "_"), "text": tr(BADGE_TEXT[x]), "help": tr(MEANING[x])} for x in self.labels]
        title = tr(self.title).format(**dict(self.values)) if self.values else tr(self.title)
        return {"name": self.name, "title": title, "help": tr(self.help), "width": self.width,
                "badges": badges, "caption": tr(self.caption), "html": self.html}


@dataclass(frozen=True)
class Extra:
    """A method's own animated panels: their boxes (rows), the function that draws them, and a line of
    markdown the method adds to each step's story (in tr's language)."""
    rows: list[list[Panel]] = field(default_factory=list)
    figures: Figures | None = None
    story: Callable[[Trace, int, Words], str] | None = None


NO_EXTRA = Extra()
STREAM = Panel("stream", N_("Token stream"), N_("The answer so far, each token coloured by how it was committed "
               "(legend on top); the highlighted tokens are this step's. Struck through: this step's rejected "
               "draft."), html=True)
TREE = Panel("tree", N_("Draft tree (accepted path in bold)"), N_("Every token drafted this step, hanging off the "
             "pending token (the square, depth 0). Accepted: a green disc; rejected: a red cross; never tested: a grey "
             "ring (the legend under the tree names them). The bold path is what the target kept; the diamond is its "
             "own token after it."))  # its caption, the legend, is built in the reader's language (rows)
MASK_HELP = N_("Which token of the verify pass may look at which (✓ on green = may attend). Each drafted token sees "
               "the context and its own ancestors only, so one forward pass checks every branch at once.")
MASK_CAPTION = N_("Green (✓ where a cell has room): may attend · grey: blocked · first column: the context. Hover a "
                  "cell: who sees what, and why.")
WINDOW_CAPTION = N_("Green: may attend · grey: blocked · dashed: the two branches. Hover a cell: who sees what, and "
                    "why. Window rows (L level, c column) see only their own trajectory: they ride along to grow the "
                    "n-gram pool and are never accepted.")


def fig_json(fig: go.Figure | dict, language: str = "en") -> dict:
    """A frame's figure as plain JSON, its words in `language`: a go.Figure converted, a figure built as a dict
    (tree_spec) as it is."""
    if isinstance(fig, dict):
        return figure_text.translated({**fig, "data": lines_merged(fig["data"])}, language)
    d = fig.to_plotly_json()
    d["layout"].pop("template", None)  # sent once for all frames
    d = json.loads(json.dumps(d, cls=PlotlyJSONEncoder))  # numpy arrays and the like, as plain JSON
    d["data"] = lines_merged(d["data"])
    return figure_text.translated(d, language)


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


@dataclass(frozen=True)
class Shell:
    """What a frame needs from the page that shows it: the language's words, the glossary's link for a question's
    terms, whether the stream strikes the step's rejected draft through, and the method's own panels."""
    tr: Words
    link: Link
    show_rejected: bool = True
    extra: Extra = NO_EXTRA


def frame(trace: Trace, i: int, shell: Shell, selected: int | None = None, predict: bool = False) -> dict:
    """Step i's frame: its story, token stream and figures. predict: with the step's question, if it has one, and
    the step as proposed ("pre"), which the player shows until the question is answered; the frame itself then
    highlights the outcome (the question's node, unless one was picked below)."""
    asked = questions.ask(trace, i) if predict else None
    if asked:
        selected = asked["node"] if selected is None else selected
    shown = _frame(trace, i, shell, selected)
    if asked:
        tr, veiled = shell.tr, questions.veiled(trace, i)
        shown["ask"] = question(asked, tr, shell.link)
        story = narrate.before_story(trace, i, tr)
        shown["pre"] = {"story": narrate.to_html(story),
                        "alt": {"tree": narrate.plain(story), "mask": narrate.mask_alt(trace, i, tr)},
                        "html": {"stream": stream_html(veiled, i, shell.show_rejected,
                                                       figure_text.stream_words(tr))},
                        "figs": {"tree": fig_json(tree_spec(veiled, i), tr.lang),
                                 "mask": fig_json(mask_spec(veiled, i), tr.lang)}}
    return shown


def _frame(trace: Trace, i: int, shell: Shell, selected: int | None) -> dict:
    s, tr, extra = trace.steps[i], shell.tr, shell.extra
    kpi = tr("running τ <b>{tau:.2f}</b> · this step: <b>{n}</b> token(s) for one target forward · draft "
             "{draft:.0f} ms, verify {verify:.0f} ms (MEASURED)").format(
        tau=kpis.running_tau(trace, i), n=len(s.tokens), draft=s.draft_ms, verify=s.verify_ms)
    kpi = f"<div class='pd-kpi'>{kpi}</div>"
    figs = {"tree": tree_spec(trace, i, selected), "mask": mask_spec(trace, i, selected)}
    html = {"stream": stream_html(trace, i, shell.show_rejected, figure_text.stream_words(tr))}
    for name, f in (extra.figures(trace, i) if extra.figures else {}).items():
        (html if isinstance(f, str) else figs)[name] = f
    story = narrate.step_story(trace, i, tr) + (" " + extra.story(trace, i, tr) if extra.story else "")
    alt = {name: narrate.plain(story) for name in figs} | {"tree": narrate.tree_alt(trace, i, tr),
                                                          "mask": narrate.mask_alt(trace, i, tr)}
    return {"story": narrate.to_html(story) + kpi, "html": html, "alt": alt,
            "figs": {name: fig_json(f, tr.lang) for name, f in figs.items()}}


def frames(trace: Trace, steps: range, shell: Shell, predict: bool = False) -> list[dict]:
    """The frames of these steps, a figure the same as the step before's sent once (shared)."""
    return shared([frame(trace, k, shell, predict=predict) for k in steps])


@functools.cache
def template() -> str:
    """The figures' plotly template, sent once for every frame."""
    return json.dumps(json.loads(go.Figure(layout={"template": TEMPLATE}).to_json())["layout"]["template"])


def rows(trace: Trace, extra: Extra, tr: Words) -> list[list[Panel]]:
    window = any(window_cells(s) for s in trace.steps)  # a combined mask has more columns
    mask = Panel("mask", N_("Combined attention mask of the verify pass") if window else
                 N_("Attention mask of the verify pass (draft block)"), MASK_HELP, 1.8 if window else 1.0,
                 caption=WINDOW_CAPTION if window else MASK_CAPTION)
    tree = dataclasses.replace(TREE, caption=legend({kind: tr(name) for kind, name in KIND_NAMES.items()}))
    return [[STREAM], [tree, mask], *extra.rows]


def panels(trace: Trace, extra: Extra, tr: Words) -> list[list[dict]]:
    """The stage's boxes, row by row, in tr's language."""
    return [[p.spec(tr) for p in row] for row in rows(trace, extra, tr)]


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


def default_node(trace: Trace, i: int) -> int | None:
    """The drafted node a step's details open on: the first rejected one, else the deepest accepted."""
    nodes = trace.steps[i].nodes
    if not nodes:
        return None
    first_bad = next((j for j, n in enumerate(nodes) if n.status == "rejected"), None)
    return first_bad if first_bad is not None else max(trace.steps[i].accepted, default=0)
