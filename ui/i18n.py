"""The app in English or French. The code's strings are the English; the French comes from a gettext
catalogue, locale/fr/LC_MESSAGES/paradec.po, read with Babel (`make messages` extracts new strings into it).

_("...") translates a string for this visitor, where it is shown. A string defined once at import (a
module's constant) is marked with N_("...") and translated where it is shown, with _(CONSTANT). A string
with values is a template: _("{n} tokens").format(n=n), never an f-string, so the catalogue can hold it.
Technical identifiers (method names, τ, parameter names) stay as they are in both languages."""
from __future__ import annotations

import functools
import gettext
import string
from collections.abc import Callable
from pathlib import Path

import streamlit as st
from babel.messages.pofile import read_po

LOCALE = Path(__file__).resolve().parents[1] / "locale"
DOMAIN = "paradec"
LANGS = {"en": "English", "fr": "Français"}
KEY = "lang"  # session state, and the URL's ?lang=fr (English leaves it out)


@functools.cache
def _read(lang: str):
    path = LOCALE / lang / "LC_MESSAGES" / f"{DOMAIN}.po"
    if lang == "en" or not path.is_file():
        return None
    with path.open("rb") as f:
        return read_po(f)


@functools.cache
def catalogue(lang: str) -> dict[str, str]:
    """msgid -> msgstr of a language's catalogue (translated, non-fuzzy entries only); English: empty."""
    po = _read(lang)
    return {m.id: m.string for m in po or () if isinstance(m.id, str) and m.id and m.string and not m.fuzzy}


@functools.cache
def _plurals(lang: str) -> tuple[dict[str, tuple[str, ...]], Callable[[int], int]]:
    """A language's plural entries (singular -> its forms) and its rule (n -> which form), from the catalogue's
    own Plural-Forms header."""
    po = _read(lang)
    if po is None:
        return {}, lambda n: int(n != 1)
    forms = {m.id[0]: tuple(m.string) for m in po if isinstance(m.id, tuple) and all(m.string) and not m.fuzzy}
    return forms, gettext.c2py(po.plural_expr)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form of a text that fits the count n, in this visitor's language (a template: format it with n)."""
    if lang() == "en":
        return singular if n == 1 else plural
    forms, rule = _plurals(lang())
    found = forms.get(singular)
    return Translated(found[rule(n)]) if found else (singular if n == 1 else plural)


def from_link() -> str:
    """The language the link asks for (read once per session, before anything is drawn); English otherwise."""
    if KEY not in st.session_state:
        asked = st.query_params.get(KEY, "en")
        st.session_state[KEY] = asked if asked in LANGS else "en"
    return st.session_state[KEY]


def lang() -> str:
    value = st.session_state.get(KEY, "en")
    return value if value in LANGS else "en"


class _French(string.Formatter):
    """French numbers: a decimal comma and a narrow no-break space between thousands (1 234,5)."""

    def format_field(self, value, spec: str) -> str:
        text = super().format_field(value, spec)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            text = text.replace(",", "\u202f").replace(".", ",")
        return text


class Translated(str):
    """A translated template whose format() writes numbers the French way."""

    def format(self, *args, **kwargs) -> str:
        return _French().vformat(self, args, kwargs)


def _(text: str) -> str:
    """`text` in this visitor's language (as written when the catalogue has no translation). In French the
    result's format() writes numbers the French way."""
    if not text or lang() == "en":
        return text
    return Translated(catalogue(lang()).get(text, text))


def labelled(labels: dict) -> Callable[[object], str]:
    """A widget's format_func for options whose values the code compares: labels maps a value to its English
    label (marked N_ where defined), translated now, not when the widget formats an option (AppTest does that
    after the page's run); a value without a label shows as itself."""
    names = {value: _(label) for value, label in labels.items()}
    return lambda value: names.get(value, str(value))


def N_(text: str) -> str:
    """Marks a string for the catalogue without translating it (a constant defined at import)."""
    return text


def switch() -> None:
    """The sidebar's language switch; it keeps the URL in step, so a shared link opens in the same language.
    Switching reruns the same page at the same step (both live in session state and the URL)."""
    st.radio("Language · Langue", list(LANGS), format_func=LANGS.get, key=KEY, horizontal=True)
    if lang() == "en":
        st.query_params.pop(KEY, None)
    else:
        st.query_params[KEY] = lang()
