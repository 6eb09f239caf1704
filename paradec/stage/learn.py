"""paradec.learn's questions and exercises in a page's language: each [template, values] translated, filled and turned
to HTML (tokens in `code`), the glossary's terms as links. The browser (paradec/web/learn.js, in the player and in the
quiz) renders them and checks the answers, with no round trip: the app's and the static site's alike."""
from __future__ import annotations

from collections.abc import Callable

from ..words import Words
from . import narrate
from .terms import SECTIONS

TERMS = {t.en: t for terms in SECTIONS.values() for t in terms}
Link = Callable[[str], str]  # a term's English name -> the glossary's address searching for it


def text(t: list, tr: Words) -> str:
    """A [template, values] pair, translated and filled, as HTML."""
    template, values = t
    return narrate.to_html(tr(template).format(**values))


def terms(names: list[str], tr: Words, link: Link) -> list[dict]:
    """The glossary's entries for these terms: their name in tr's language and a link to the glossary searching for
    it."""
    out = []
    for name in names:
        term = TERMS[name]
        out.append({"text": term.fr if tr.lang == "fr" else term.en, "href": link(term.en), "title": tr(term.meaning)})
    return out


def question(q: dict, tr: Words, link: Link) -> dict:
    """A predict question for the browser: its words in tr's language, the answer, and what to highlight."""
    return {"kind": q["kind"], "text": text(q["text"], tr), "choices": [text(c, tr) for c in q["choices"]],
            "answer": q["answer"], "why": text(q["why"], tr), "pick": q["pick"], "node": q["node"],
            "terms": terms(q["terms"], tr, link)}


def exercise(e: dict, tr: Words) -> dict:
    return {"id": e["id"], "kind": e["kind"], "text": text(e["text"], tr),
            "choices": [text(c, tr) for c in e["choices"]], "answer": e["answer"],
            "tolerance": e["tolerance"], "hint": text(e["hint"], tr), "why": text(e["why"], tr)}


def labels(tr: Words) -> dict[str, str]:
    """The words of the question panel and the exercises (paradec/web/learn.js keeps the English as its default)."""
    return {"score": tr("This page: {right} of {asked} predicted right · this session: {sright} of {sasked}"),
            "right": tr("Right."), "wrong": tr("Not quite: the answer was {answer}."), "why": tr("Why:"),
            "terms": tr("Words:"), "check": tr("Check"), "hint": tr("Hint:"), "solved": tr("Right!"),
            "giveup": tr("Show the answer"), "answer": tr("Answer:"), "wait": tr("Answer to see the verify pass."),
            "reveal": tr("Reveal to the class"), "class": tr("The class is voting: reveal when the votes are in."),
            "revealed": tr("The answer: {answer}."), "placeholder": tr("your answer"), "again": tr("Try again.")}
