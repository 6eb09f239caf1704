"""A method page of the static site: the catalogue's title and summary, its recorded traces to choose from, the
step player over the chosen one (its frames packed in a script of their own, one per trace, language and mode:
paradec.site.payload), the step's details (the microscope, the KPIs) folded under it, and the page's exercises."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import catalog
from ..learn import exercises, opening
from ..plots.style import FROM_RUN, MEASURED
from ..stage import extras, narrate
from ..stage import learn as worded
from ..stage import player as player_words
from ..stage.frames import BADGE_TEXT, MEANING, Shell
from ..traces.trace import Trace
from ..words import N_, Words
from . import payload
from .html import Page, esc, file_of


@dataclass(frozen=True)
class Recorded:
    """One recorded trace a page offers: assets/traces/METHOD-NAME.json."""
    method: catalog.Method
    name: str
    path: Path

    @property
    def key(self) -> str:
        return f"{self.method.name}-{self.name}"


def recorded(page: str, traces: Path) -> list[Recorded]:
    """The recorded traces of every method on a page, in the catalogue's order, then by name."""
    return [Recorded(m, f.stem[len(m.name) + 1:], f) for m in catalog.on_page(page)
            for f in sorted(traces.glob(f"{m.name}-*.json"))]


def opens_on(found: list[Recorded], loaded: dict[str, Trace]) -> Recorded:
    """The trace a page opens on, as the app's: of its first method's runs, the first its description prefers with a
    step its rule finds (paradec.learn.opening), else its first."""
    m = found[0].method
    runs = {r.name: r for r in found if r.method == m}
    chosen = opening.run(m.opening, m.opens_on, {name: loaded[r.key].steps for name, r in runs.items()})
    return runs[chosen[0]] if chosen else next(iter(runs.values()))


def link(lang: str):
    """A question's term -> the site's glossary searching for it."""
    return lambda term: f"{file_of('glossary', lang)}?term={term.replace(' ', '+')}"


def badges(tr: Words, *labels: str) -> list[dict]:
    return [{"kind": x.replace(" ", "_"), "text": tr(BADGE_TEXT[x]), "help": tr(MEANING[x])} for x in labels]


def files(r: Recorded, trace: Trace, tr: Words) -> dict[str, str]:
    """The scripts of one trace in tr's language (data/KEY.LANG.js, .predict.js, .details.js): file -> its text."""
    shell = Shell(tr, link(tr.lang), True, extras.for_page(r.method.page, trace))
    base = f"{r.key}.{tr.lang}"
    return {f"data/{base}.js": payload.script(base, payload.player(trace, shell, False)),
            f"data/{base}.predict.js": payload.script(f"{base}.predict", payload.player(trace, shell, True)),
            f"data/{base}.details.js": payload.script(f"{base}.details", payload.details(trace, tr))}


def _label(r: Recorded, tr: Words, several: bool) -> str:
    name = tr(narrate.TRACE_NAMES[r.name]) if r.name in narrate.TRACE_NAMES else r.name
    return f"{r.method.version or tr(r.method.title)} · {name}" if several else name


def page(url: str, found: list[Recorded], loaded: dict[str, Trace], assets: Path, tr: Words) -> Page:
    """The page of `url` in tr's language over its recorded traces (loaded: key -> trace)."""
    m = catalog.pages()[url]
    several = len({r.method.name for r in found}) > 1
    offered = []
    for r in found:
        t, base = loaded[r.key], f"{r.key}.{tr.lang}"
        offered.append({"name": r.key, "label": _label(r, tr, several), "caption": narrate.describe(t, tr),
                        "note": narrate.to_html(narrate.lesson_note(t, tr)), "start": narrate.lesson(t) + 1,
                        "src": f"data/{base}.js", "predict": f"data/{base}.predict.js",
                        "details": f"data/{base}.details.js", "key": base})
    greedy = {r.key: loaded[r.key].sampling.get("temperature", 0) <= 0 for r in found}
    data = {"traces": offered, "open": opens_on(found, loaded).key, "labels": player_words.labels(tr),
            "exercises": [worded.exercise(e, tr) for e in exercises.for_page(url, assets)],
            "details": {"microscope": tr("Rejection-sampling microscope"),
                        "greedy": tr("Acceptance microscope (greedy)"), "kpis": tr("Step KPIs"),
                        "title": tr("Details of step {n}"), "greedy_of": greedy,
                        "badges": badges(tr, FROM_RUN, MEASURED)}}
    intro = tr("**{title}** ({family}): {summary}.").format(title=tr(m.title), family=tr(m.family),
                                                             summary=tr(m.summary))
    picker = esc(tr("Recorded run"))
    body = (f"<h1>{esc(tr(m.title))}</h1><p class='pd-intro'>{narrate.to_html(intro)}</p>"
            f"<div class='pd-traces' id='pd-traces' role='group' aria-label='{picker}'></div>"
            "<p class='pd-caption' id='pd-caption'></p><p class='pd-lesson' id='pd-lesson'></p>"
            "<div id='pd-player'></div>"
            "<details id='pd-details' class='st-key-pd-details-site'>"
            f"<summary>{esc(tr(DETAILS))}"
            "</summary><div id='pd-details-body'></div></details>")
    if data["exercises"]:
        body += (f"<h2>{esc(tr(EXERCISES_TITLE))}</h2><p class='pd-caption'>{esc(tr(EXERCISES))}</p>"
                 "<div id='pd-quiz'></div>")
    return Page(url, tr(m.title), body, "method", data)


EXERCISES_TITLE = N_("Exercises")
EXERCISES = N_("Checked against the recorded runs as you answer: a wrong answer gets a hint, two a way to see the "
               "answer. Numbers may be rounded to two decimals.")
DETAILS = N_("This step's details: the drafted tokens' numbers, the microscope, the KPIs")
