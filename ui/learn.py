"""paradec.learn's questions and exercises in the visitor's language: each [template, values] translated, filled
and turned to HTML (tokens in `code`), the glossary's terms as links. The browser (paradec/web/learn.js, in the player
and in ui/quiz.py's component) renders them and checks the answers, with no round trip."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from paradec.learn import exercises, roofline

from . import narrate
from .i18n import _, lang
from .terms import SECTIONS

ASSETS = Path(__file__).resolve().parents[1] / "assets"
TERMS = {t.en: t for terms in SECTIONS.values() for t in terms}


def text(t: list) -> str:
    """A [template, values] pair, translated and filled, as HTML."""
    template, values = t
    return narrate.to_html(_(template).format(**values))


def terms(names: list[str]) -> list[dict]:
    """The glossary's entries for these terms: their name in the visitor's language and a link to the glossary
    page searching for it."""
    query = f"&lang={lang()}" if lang() != "en" else ""
    out = []
    for name in names:
        term = TERMS[name]
        shown = term.fr if lang() == "fr" else term.en
        out.append({"text": shown, "href": f"glossary?term={term.en.replace(' ', '+')}{query}",
                    "title": _(term.meaning)})
    return out


def question(q: dict) -> dict:
    """A predict question for the browser: its words in this language, the answer, and what to highlight."""
    return {"kind": q["kind"], "text": text(q["text"]), "choices": [text(c) for c in q["choices"]],
            "answer": q["answer"], "why": text(q["why"]), "pick": q["pick"], "node": q["node"],
            "terms": terms(q["terms"])}


def exercise(e: dict) -> dict:
    return {"id": e["id"], "kind": e["kind"], "text": text(e["text"]), "choices": [text(c) for c in e["choices"]],
            "answer": e["answer"], "tolerance": e["tolerance"], "hint": text(e["hint"]), "why": text(e["why"])}


@st.cache_data(max_entries=32, show_spinner=False)
def _page_exercises(page: str) -> list[dict]:
    return exercises.for_page(page, ASSETS)


def page_exercises(page: str) -> list[dict]:
    """The exercises of a method page, in the visitor's language (computed once per page from the shipped traces)."""
    return [exercise(e) for e in _page_exercises(page)]


def roofline_questions() -> list[dict]:
    return [question(q) for q in roofline.questions(ASSETS)]


def labels() -> dict[str, str]:
    """The words of the question panel and the exercises (paradec/web/learn.js keeps the English as its default)."""
    return {"score": _("This page: {right} of {asked} predicted right · this session: {sright} of {sasked}"),
            "right": _("Right."), "wrong": _("Not quite: the answer was {answer}."), "why": _("Why:"),
            "terms": _("Words:"), "check": _("Check"), "hint": _("Hint:"), "solved": _("Right!"),
            "giveup": _("Show the answer"), "answer": _("Answer:"), "wait": _("Answer to see the verify pass."),
            "reveal": _("Reveal to the class"), "class": _("The class is voting: reveal when the votes are in."),
            "revealed": _("The answer: {answer}."), "placeholder": _("your answer"), "again": _("Try again.")}
