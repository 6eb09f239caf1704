"""paradec.learn's questions and exercises in the visitor's language (paradec.stage.learn words them, for the app and
the static site alike), the glossary's terms linked to the app's glossary page. The browser (paradec/web/learn.js, in
the player and in ui/quiz.py's component) renders them and checks the answers, with no round trip."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from paradec.learn import exercises, roofline
from paradec.stage import learn as words_of

from .i18n import lang, words

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def _link(term: str) -> str:
    """The app's glossary page, searching for a term, in the visitor's language."""
    query = f"&lang={lang()}" if lang() != "en" else ""
    return f"glossary?term={term.replace(' ', '+')}{query}"


def question(q: dict) -> dict:
    """A predict question for the browser: its words in this language, the answer, and what to highlight."""
    return words_of.question(q, words(), _link)


@st.cache_data(max_entries=32, show_spinner=False)
def _page_exercises(page: str) -> list[dict]:
    return exercises.for_page(page, ASSETS)


def page_exercises(page: str) -> list[dict]:
    """The exercises of a method page, in the visitor's language (computed once per page from the shipped traces)."""
    return [words_of.exercise(e, words()) for e in _page_exercises(page)]


def roofline_questions() -> list[dict]:
    return [question(q) for q in roofline.questions(ASSETS)]


def labels() -> dict[str, str]:
    """The words of the question panel and the exercises (paradec/web/learn.js keeps the English as its default)."""
    return words_of.labels(words())
