"""The app and the static site in French (paradec/words.py): every string the code marks has a French translation
in the catalogue, with the same placeholders and markup, the catalogue holds nothing the code no longer says, and no
teaching string is left unmarked (a prose string outside _(), tr(), ngettext() or N_() fails here, whoever adds it)."""
import ast
import importlib.util
import re
import string
from pathlib import Path

from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[1]
PO = ROOT / "locale" / "fr" / "LC_MESSAGES" / "paradec.po"
SOURCES = [ROOT / "app.py", *sorted((ROOT / "views").glob("*.py")), *sorted((ROOT / "ui").glob("*.py")),
           *sorted((ROOT / "paradec" / "learn").glob("*.py")),
           *sorted((ROOT / "paradec" / "stage").glob("*.py")),
           *sorted(p for p in (ROOT / "paradec" / "site").glob("*.py") if p.name != "export.py")]  # its CLI: English
KEYWORDS = {"_": None, "N_": None, "tr": None}  # tr: a Words handed in (paradec.stage)
PLURAL = "ngettext"  # ngettext(singular, plural, n): a plural entry of the catalogue
BILINGUAL = {"T", "Term"}  # ui/glossary.py: T(english, french, meaning...)
WORD = re.compile(r"^[(\"'«]*[A-Za-zÀ-ÿ]{3,}[.,;:!?)\"'»]*$")


def _marked() -> set[str]:
    spec = importlib.util.spec_from_file_location("messages", ROOT / "scripts" / "messages.py")
    messages = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(messages)
    return set(messages.marked())


def _french() -> dict:
    """msgid -> translation; a plural entry: (singular, plural) -> its forms, every one translated."""
    with PO.open("rb") as f:
        return {m.id: m.string for m in read_po(f) if m.id and m.string and all(m.string) and not m.fuzzy}


def test_every_marked_string_has_a_french_translation_and_no_other():
    marked, french = _marked(), _french()
    missing = sorted(marked - set(french))
    stale = sorted(set(french) - marked)
    assert not missing, f"{len(missing)} strings without French (make messages, then translate): {missing[:5]}"
    assert not stale, f"{len(stale)} translations of strings the code no longer has (make messages): {stale[:5]}"


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def test_translations_keep_placeholders_and_markup():
    bad = {}
    for ids, forms in _french().items():
        pairs = zip(ids, forms) if isinstance(ids, tuple) else [(ids, forms)]  # a plural: each form its English
        for en, fr in pairs:
            same = [(_fields(en), _fields(fr)), *((en.count(m), fr.count(m)) for m in ("**", "`", "\n\n", "$"))]
            if any(a != b for a, b in same):
                bad[en[:60]] = fr[:60]
    assert not bad, bad


def test_a_count_takes_the_catalogues_plural_form():
    """French says 1 token, 0 token and 2 tokens (the catalogue's rule: plural above one), English 0 tokens."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_plural_forms).run()
    assert [m.value for m in at.markdown] == ["**1 token validé** pour une passe de la cible.",
                                              "**0 token validé** pour une passe de la cible.",
                                              "**2 tokens validés** pour une passe de la cible.",
                                              "**0 tokens committed** for one target forward."]


def _plural_forms():
    import sys

    import streamlit as st

    sys.path.insert(0, ".")
    from ui import i18n

    one, many = "**{n} token committed** for one target forward.", "**{n} tokens committed** for one target forward."
    st.session_state[i18n.KEY] = "fr"
    for n in (1, 0, 2):
        st.markdown(i18n.ngettext(one, many, n).format(n=n))
    st.session_state[i18n.KEY] = "en"
    st.markdown(i18n.ngettext(one, many, 0).format(n=0))


def _prose(text: str) -> bool:
    """Words a visitor reads: three or more words of three letters or more (not code, CSS or a key)."""
    text = re.sub(r"`[^`]*`|\{[^}]*\}|<[^>]*>", " ", text)
    return sum(bool(WORD.match(w)) for w in text.split()) >= 3


def _unmarked(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    inside = set()  # nodes inside _() / N_() calls, and docstrings
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (isinstance(node.func, ast.Name) and node.func.id in (*KEYWORDS, PLURAL) or
                                           isinstance(node.func, ast.Attribute) and node.func.attr == PLURAL):
            inside.update(id(n) for a in node.args for n in ast.walk(a))  # tr.ngettext(...): a Words' plural
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in BILINGUAL:
            inside.update(id(a) for a in node.args[:2])  # a glossary term's English and French names, as written
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node) is not None:
            inside.add(id(node.body[0].value))
    lines = path.read_text().splitlines()
    out = []
    for node in ast.walk(tree):
        if id(node) in inside or not hasattr(node, "lineno") or "# not taught" in lines[node.lineno - 1]:
            continue
        if isinstance(node, ast.JoinedStr):
            inside.update(id(v) for v in node.values)
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if _prose(text):
            out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {text[:70]!r}")
    return out


def test_no_teaching_string_is_left_unmarked():
    found = [hit for path in SOURCES for hit in _unmarked(path)]
    assert not found, f"{len(found)} strings to mark with _() or N_():\n" + "\n".join(found)


def test_templates_are_not_f_strings():
    """_(f"...") (or tr(f"...")) would look up a string already filled in, never in the catalogue: _() takes a literal
    or a name that holds one marked N_() where it is defined; N_() takes a literal."""
    bad = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in KEYWORDS:
                named = (ast.Name, ast.Attribute, ast.Subscript) if node.func.id != "N_" else ()
                if not (len(node.args) == 1 and isinstance(node.args[0], (ast.Constant, *named))):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not bad, bad


def test_french_templates_write_french_numbers():
    from ui.i18n import Translated

    text = Translated("τ {tau:.2f}, {n:,} tokens, step {i}, {name}").format(tau=1.054, n=49152, i=3, name="v1.2")
    assert text == "τ 1,05, 49\u202f152 tokens, step 3, v1.2"
