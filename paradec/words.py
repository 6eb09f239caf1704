"""The words a page shows, in English or French, for any shell (the app, the static site). The code's strings are the
English; the French comes from a gettext catalogue, locale/fr/LC_MESSAGES/paradec.po, read with Babel (`make
messages` extracts new strings into it). A language is never a global: a Words is made for one and handed to what
draws, which calls it on each string it shows (the app makes one per visitor, ui/i18n.py).

A string defined once at import (a module's constant) is marked with N_("...") and translated where it is shown. A
string with values is a template: tr("{n} tokens").format(n=n), never an f-string, so the catalogue can hold it."""
from __future__ import annotations

import functools
import gettext
import string
from collections.abc import Callable
from pathlib import Path

LOCALE = Path(__file__).resolve().parents[1] / "locale"
DOMAIN = "paradec"
LANGS = {"en": "English", "fr": "Français"}


@functools.cache
def _read(lang: str):
    path = LOCALE / lang / "LC_MESSAGES" / f"{DOMAIN}.po"
    if lang == "en" or not path.is_file():
        return None
    from babel.messages.pofile import read_po  # the app's and the export's extra (pyproject: app), not the library's

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


def translate(text: str, lang: str) -> str:
    """`text` in `lang` (as written when the catalogue has no translation). In French the result's format() writes
    numbers the French way."""
    if not text or lang == "en":
        return text
    return Translated(catalogue(lang).get(text, text))


class Words:
    """One language's translator: words(text) is text in that language; words.lang names it."""

    def __init__(self, lang: str = "en"):
        self.lang = lang if lang in LANGS else "en"

    def __call__(self, text: str) -> str:
        return translate(text, self.lang)

    def ngettext(self, singular: str, plural: str, n: int) -> str:
        """The form of a text that fits the count n, in this language (a template: format it with n)."""
        if self.lang == "en":
            return singular if n == 1 else plural
        forms, rule = _plurals(self.lang)
        found = forms.get(singular)
        return Translated(found[rule(n)]) if found else (singular if n == 1 else plural)


def N_(text: str) -> str:
    """Marks a string for the catalogue without translating it (a constant defined at import)."""
    return text
