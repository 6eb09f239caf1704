"""A figure's words in a page's language. paradec.plots builds every figure in English and marks its texts with N_
for the catalogue; where a figure is shown, its titles, axis titles, legend entries, annotations and tick labels are
looked up in the catalogue. A text made from a template ("rerank: {kept} of {total} kept") is recognised by the
template's pattern and its values carried over. A long title that plotly's layout broke in two ("<br>") is
translated whole and broken again."""
from __future__ import annotations

import copy
import functools
import re

from ..plots.style import LINE, TOP, wrap
from ..plots.tokens import WORDS
from ..words import Translated, Words, catalogue

FIELD = re.compile(r"\{(\w+)(?::[^{}]*)?\}")


@functools.cache
def _templates(language: str) -> list[tuple[re.Pattern, str]]:
    """(pattern, translation with plain fields) for every catalogue entry with values, longest first."""
    out = []
    for msgid, msgstr in catalogue(language).items():
        if "{" not in msgid or not FIELD.search(msgid):
            continue
        parts, pattern = FIELD.split(msgid), ""
        for k, part in enumerate(parts):  # split: text, name, text, name, ..., text
            pattern += re.escape(part) if k % 2 == 0 else f"(?P<{part}>.+?)"
        try:
            out.append((re.compile(pattern + r"\Z", re.S), FIELD.sub(r"{\1}", msgstr)))
        except re.error:  # a field named twice: such an entry is never a figure's text
            continue
    return sorted(out, key=lambda entry: -len(entry[0].pattern))


TAG = re.compile(r"(<[^>]+>)")


@functools.lru_cache(maxsize=4096)
def say(text: str, language: str) -> str:
    """One figure text in `language`: the catalogue's entry, a template's with its values, a long title broken
    by plotly's layout translated whole and broken again, or marked-up text (a legend's coloured symbol) translated
    between its tags; else the text as it is."""
    if not text or language == "en" or not isinstance(text, str):
        return text
    found = catalogue(language).get(text)  # an entry with its own <br> (a mask's branch label) as it is
    if found is None and "<br>" in text:  # a title layout() broke: translated whole (a template's too), broken again
        whole = _entry(text.replace("<br>", " "), language)
        found = whole and wrap(whole, max(len(line) for line in text.split("<br>")))
    if found is None:
        found = _entry(text, language)
    if found is None and TAG.search(text):
        found = "".join(part if TAG.fullmatch(part) or not part.strip() else _spaced(part, language)
                        for part in TAG.split(text))
    return text if found is None else found


def _entry(text: str, language: str) -> str | None:
    """The catalogue's translation of a text, or of the template it was made from; None: neither."""
    found = catalogue(language).get(text)
    if found is not None:
        return found
    for pattern, template in _templates(language):
        m = pattern.match(text)
        if m:
            return Translated(template).format(**m.groupdict())
    return None


def _spaced(part: str, language: str) -> str:
    """A piece of text between tags, translated, its surrounding spaces kept."""
    core = part.strip()
    found = _entry(core, language)
    return part if found is None else part.replace(core, found)


TITLE_WIDTH = 26  # characters of a title's line, as paradec.plots.style.layout wraps it: a translation too


def _room_for_lines(lay: dict, more: int) -> None:
    """A title that the translation broke into more lines: as much more room above the plot (as layout() gives)."""
    if more > 0 and isinstance(lay.get("margin"), dict) and lay["margin"].get("t") is not None:
        lay["margin"]["t"] += LINE * more
        if lay.get("height"):
            lay["height"] += LINE * more
        if isinstance(lay["title"].get("y"), (int, float)) and lay.get("height"):
            lines = lay["title"]["text"].count("<br>") + 1  # plotly puts a second line above: as layout() does
            lay["title"]["y"] = 1 - (TOP + LINE * (lines - 1)) / lay["height"]


def _layout_texts(lay: dict, say_it) -> None:
    title = lay.get("title")
    if isinstance(title, dict) and title.get("text"):
        was = title["text"]
        title["text"] = wrap(say_it(was), TITLE_WIDTH)
        _room_for_lines(lay, title["text"].count("<br>") - was.count("<br>"))
    for key, axis in lay.items():
        if key.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
            if isinstance(axis.get("title"), dict) and axis["title"].get("text"):
                axis["title"]["text"] = say_it(axis["title"]["text"])
            if isinstance(axis.get("ticktext"), list):
                axis["ticktext"] = [say_it(t) for t in axis["ticktext"]]
    for note in lay.get("annotations") or []:
        if note.get("text"):
            note["text"] = say_it(note["text"])
    legend = lay.get("legend")
    if isinstance(legend, dict) and isinstance(legend.get("title"), dict) and legend["title"].get("text"):
        legend["title"]["text"] = say_it(legend["title"]["text"])


def translated(fig, language: str):
    """A figure with its words in `language`, as a new plain-JSON figure ({"data": [...], "layout": {...}}; the one
    given, a dict or a plotly go.Figure, is left as it is). English: the figure itself."""
    if language == "en":
        return fig
    fig = fig if isinstance(fig, dict) else fig.to_plotly_json()
    say_it = functools.partial(_say_any, language=language)
    lay = copy.deepcopy(fig.get("layout", {}))  # a layout is small; the data's arrays are not copied
    _layout_texts(lay, say_it)
    data = [{**t, "name": say_it(t["name"])} if t.get("name") else t for t in fig.get("data", [])]
    return {**fig, "layout": lay, "data": data}


def _say_any(text, language: str):
    return say(text, language) if isinstance(text, str) else text


def stream_words(tr: Words) -> dict:
    """The token stream's legend and details in tr's language (paradec.plots.tokens.WORDS)."""
    return {key: tr(text) for key, text in WORDS.items()}
