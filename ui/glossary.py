"""The glossary: every technical term of the article the app teaches, in English and French, a one-line
definition and the view that shows it (or a note that the app does not). tests/test_glossary.py checks it
against the article's terms, listed in assets/glossary/article_terms.txt."""
from __future__ import annotations

import streamlit as st

from paradec.stage.terms import SECTIONS, Term

from . import guide
from .i18n import _, lang


def matches(term: Term, text: str) -> bool:
    text = text.strip().lower()
    return not text or any(text in s.lower() for s in (term.en, term.fr, term.meaning, _(term.meaning)))


def show(search: str) -> int:
    """The sections as tables, only the terms that match `search`; returns how many were shown."""
    shown, shown_sections = 0, []
    query = f"?lang={lang()}" if lang() != "en" else ""
    for section, terms in SECTIONS.items():
        found = [t for t in terms if matches(t, search)]
        if not found:
            continue
        shown += len(found)
        st.markdown(f"#### {_(section)}")
        rows = [f"| **{t.en}** | **{t.fr}** | {_(t.meaning)} | {_where(t, query)} |" for t in found]
        head = "| English | Français | {meaning} | {where} |".format(meaning=_("Meaning"), where=_("Where to see it"))
        st.container(key=f"pd-glossary-{len(shown_sections)}").markdown("\n".join([head, "|---|---|---|---|", *rows]))
        shown_sections.append(section)
    return shown


def _where(term: Term, query: str) -> str:
    if not term.view:
        return _("not shown in the app")
    what = f" ({_(term.where)})" if term.where else ""
    return f"[{guide.title(term.view)}](/{term.view}{query}){what}"
