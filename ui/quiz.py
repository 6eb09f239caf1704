"""The quiz: a method page ends with its exercises (paradec.learn.exercises, checked in the browser as they are
answered), and the Roofline page asks its predict questions in predict mode. One browser component (paradec/web/learn.js
and paradec/web/quiz.js), which a static page can load as it is, with the same JSON."""
from __future__ import annotations

import streamlit as st

from paradec import catalog, web

from . import learn, predict, presenter
from .i18n import _

_QUIZ = st.components.v2.component("paradec.quiz", js=web.text(web.QUIZ_JS), css=web.text(web.QUIZ_CSS),
                                   isolate_styles=False)


def page_end(url: str) -> None:
    """What a page ends with: a method page's exercises (other pages: nothing)."""
    if url in catalog.pages():
        exercises(url)


def exercises(page: str) -> None:
    items = learn.page_exercises(page)
    if not items:
        return
    if not presenter.on():
        st.subheader(_("Exercises"))
    with presenter.fold(_("Exercises")):  # a projector's page keeps to the player; folded there
        st.caption(_("Checked against the recorded runs as you answer: a wrong answer gets a hint, two a way to see "
                     "the answer. Numbers may be rounded to two decimals."))
        _QUIZ(key=f"quiz.{page}", data={"page": page, "exercises": items, "labels": learn.labels()})


def questions(page: str, items: list[dict]) -> None:
    """Predict questions that stand without a player (predict mode only), scored with the player's."""
    if predict.on() and items:
        _QUIZ(key=f"quiz.{page}.ask", data={"page": page, "questions": items, "labels": learn.labels()})
