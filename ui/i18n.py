"""The app in English or French: the visitor's language, read from the session (the URL's ?lang=fr the first time),
and _() that translates into it. The words and the catalogue are paradec.words' (the static site reads the same
catalogue, locale/fr/LC_MESSAGES/paradec.po); here the language is the visitor's, and words() hands it to paradec's
code that draws (paradec.stage), which never reads a session.

_("...") translates a string for this visitor, where it is shown. A string defined once at import (a
module's constant) is marked with N_("...") and translated where it is shown, with _(CONSTANT). A string
with values is a template: _("{n} tokens").format(n=n), never an f-string, so the catalogue can hold it.
Technical identifiers (method names, τ, parameter names) stay as they are in both languages."""
from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from paradec.words import LANGS, N_, Translated, Words, catalogue, translate

__all__ = ["LANGS", "N_", "Translated", "catalogue", "from_link", "lang", "labelled", "ngettext", "switch", "words",
           "_"]
KEY = "lang"  # session state, and the URL's ?lang=fr (English leaves it out)


def from_link() -> str:
    """The language the link asks for (read once per session, before anything is drawn); English otherwise."""
    if KEY not in st.session_state:
        asked = st.query_params.get(KEY, "en")
        st.session_state[KEY] = asked if asked in LANGS else "en"
    return st.session_state[KEY]


def lang() -> str:
    value = st.session_state.get(KEY, "en")
    return value if value in LANGS else "en"


def words() -> Words:
    """This visitor's translator, for paradec's code that draws (paradec.stage)."""
    return Words(lang())


def _(text: str) -> str:
    """`text` in this visitor's language (as written when the catalogue has no translation). In French the
    result's format() writes numbers the French way."""
    return translate(text, lang())


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form of a text that fits the count n, in this visitor's language (a template: format it with n)."""
    return words().ngettext(singular, plural, n)


def labelled(labels: dict) -> Callable[[object], str]:
    """A widget's format_func for options whose values the code compares: labels maps a value to its English
    label (marked N_ where defined), translated now, not when the widget formats an option (AppTest does that
    after the page's run); a value without a label shows as itself."""
    names = {value: _(label) for value, label in labels.items()}
    return lambda value: names.get(value, str(value))


def switch() -> None:
    """The sidebar's language switch; it keeps the URL in step, so a shared link opens in the same language.
    Switching reruns the same page at the same step (both live in session state and the URL)."""
    st.radio("Language · Langue", list(LANGS), format_func=LANGS.get, key=KEY, horizontal=True)
    if lang() == "en":
        st.query_params.pop(KEY, None)
    else:
        st.query_params[KEY] = lang()
