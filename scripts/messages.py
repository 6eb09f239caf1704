"""`make messages`: bring the French catalogue (locale/fr/LC_MESSAGES/paradec.po, paradec/words.py) in step with
the code.

The strings are what Babel extracts from the app's Python (app.py, views/, ui/: keywords _, N_ and ngettext), from
paradec/learn (its questions' and exercises' templates, marked N_), from paradec/stage and paradec/site (what the
app and the static site show of a trace, translated by the Words they are handed: tr, tr.ngettext), and what
paradec.catalog holds: every method's page title, link label, family and summary, its predict questions' own words,
and its parameters' labels and help (the catalog translates nothing: they are translated where they are drawn).
New strings enter the catalogue untranslated, strings the code no longer has leave it, translations stay.
tests/test_i18n.py then fails until every entry is French."""
from __future__ import annotations

import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
PO = ROOT / "locale" / "fr" / "LC_MESSAGES" / "paradec.po"
KEYWORDS = {"_": None, "N_": None, "tr": None,  # tr: paradec.stage's Words, a language handed in
            "ngettext": (1, 2)}  # ngettext(singular, plural, n) (or tr.ngettext): the catalogue's plurals
METHOD_MAP = [("app.py", "python"), ("views/**.py", "python"), ("ui/**.py", "python"),
              ("paradec/plots/**.py", "python"),  # the figures' words: N_, translated where shown (stage.figure_text)
              ("paradec/learn/**.py", "python"),  # the questions' and exercises' templates, likewise (stage.learn)
              ("paradec/stage/**.py", "python"),  # the player's frames, stories and panels (the app's and the site's)
              ("paradec/site/**.py", "python")]  # the static site's own words


def marked() -> list[str]:
    """Every string the app shows through the catalogue, in the order they come (no repeats)."""
    sys.path.insert(0, str(ROOT))
    from paradec import catalog

    found = [msg for _, _, msg, _, _ in extract_from_dir(ROOT, method_map=METHOD_MAP, keywords=KEYWORDS)]
    params = [p for m in catalog.METHODS.values() for p in m.params]
    found += [text for m in catalog.METHODS.values() for text in (m.title, m.link) if text]  # the pages' names
    found += [text for m in catalog.METHODS.values() for text in (m.family, m.summary)]  # a page's first line
    found += [a.text for m in catalog.METHODS.values() for a in m.questions if a.text]  # questions in their own words
    found += [text for p in params for text in (p.label, p.help) if text]
    return list(dict.fromkeys(found))


def main() -> None:
    old = read_po(PO.open("rb")) if PO.is_file() else Catalog(locale="fr")
    new = Catalog(locale="fr", project="paradec", header_comment=old.header_comment)
    for text in marked():  # a plural entry's id is (singular, plural), its translation one string per form
        kept = old.get(text)
        blank = ("",) * new.num_plurals if isinstance(text, tuple) else ""
        new.add(text, kept.string if kept and not kept.fuzzy and type(kept.string) is type(blank) else blank)
    PO.parent.mkdir(parents=True, exist_ok=True)
    tmp = PO.with_suffix(".po.tmp")
    with tmp.open("wb") as f:
        write_po(f, new, no_location=True, width=100)
    tmp.replace(PO)  # atomic: an interrupted run leaves the old catalogue
    missing = sum(1 for m in new if m.id and not (all(m.string) if isinstance(m.string, tuple) else m.string))
    print(f"{PO.relative_to(ROOT)}: {len(new)} strings, {missing} to translate")


if __name__ == "__main__":
    main()
