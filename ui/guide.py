"""The guided path: the pages in the order a newcomer should read them, grouped as Home lists them, and the "next"
link every page ends with. A method's page, title, icon and link label come from its description in
paradec.catalog (the one list of methods); this file lists only the pages that are not a method's."""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import streamlit as st

from paradec import catalog

from .i18n import N_, _

ROOT = Path(__file__).resolve().parents[1]


class Entry(NamedTuple):
    file: str | None  # the page's file; None: a method without a page of its own (ui.page.generic_page draws it)
    title: str  # in the sidebar (English; translated where drawn)
    icon: str
    link: str  # its label on Home's map


# url path -> the page, for the pages that are not a method's (Home first, then after the methods' pages)
OTHERS = {
    "": Entry("views/home.py", N_("Home"), ":material/home:", N_("Home: the map of every page")),
    "arena": Entry("views/arena.py", N_("Arena: all methods"), ":material/sports_score:",
                   N_("Arena: one prompt, raced")),
    "roofline": Entry("views/roofline.py", N_("Roofline"), ":material/show_chart:", N_("Roofline: why that is slow")),
    "benchmark": Entry("views/benchmark.py", N_("Benchmark"), ":material/leaderboard:", N_("Benchmark: many prompts")),
    "tune": Entry("views/tune.py", N_("Tune"), ":material/tune:", N_("Tune: settings per task")),
    "numerics": Entry("views/numerics.py", N_("Numerics: float32 vs bfloat16"), ":material/calculate:",
                      N_("Numerics: bfloat16 vs float32")),
    "production": Entry("views/production.py", N_("Production engine"), ":material/dns:",
                        N_("Production engines (vLLM)")),
    "glossary": Entry("views/glossary.py", N_("Glossary"), ":material/translate:", N_("Glossary: the article's words")),
    "article": Entry("views/article.py", N_("The article, checked"), ":material/fact_check:",
                     N_("The article, checked")),
}
BASELINE = "baseline"  # the family whose pages open the path, before the Roofline page says why they are slow


def method_entry(path: str, method: catalog.Method) -> Entry:
    file = f"views/{path}.py"
    return Entry(file if (ROOT / file).is_file() else None, method.title, method.icon, method.link)


def pages() -> dict[str, Entry]:
    """url path -> page, in the sidebar's order: Home, every method's page (the catalogue's order), the others."""
    methods = {path: method_entry(path, m) for path, m in catalog.pages().items()}
    return {"": OTHERS[""], **methods, **{path: e for path, e in OTHERS.items() if path}}


def path() -> dict[str, list[str]]:
    """Home's groups -> their pages' url paths, in reading order."""
    owners = catalog.pages()
    baseline = [p for p, m in owners.items() if m.family == BASELINE]
    return {N_("1. The idea"): [*baseline, "roofline"],
            N_("2. The methods"): [p for p, m in owners.items() if m.family != BASELINE],
            N_("3. Compare"): ["arena", "benchmark", "tune"],
            N_("4. The hardware"): ["numerics", "production"],
            N_("5. The article"): ["glossary", "article"]}


def order() -> list[str]:
    """Every page's url path in reading order, Home first."""
    return ["", *(p for group in path().values() for p in group)]


def title(url: str) -> str:
    """A page's title, in the reader's language."""
    return _(pages()[url].title)


def page(url: str, entry: Entry, default: bool = False):
    """The page's st.Page: its file, or the generic method page."""
    if entry.file:
        return st.Page(entry.file, title=_(entry.title), icon=entry.icon, url_path=url or None, default=default)
    from .page import generic_page

    def draw():
        generic_page(catalog.pages()[url].name)

    draw.__name__ = f"method_{url}"  # Streamlit names a callable page after its function
    return st.Page(draw, title=_(entry.title), icon=entry.icon, url_path=url)


VOTE = "vote"  # a class vote's student page: opened from the presenter's link or QR code, never from the sidebar


def navigation() -> dict[str, object]:
    """url path -> st.Page, for st.navigation (app.py) and the links; the students' vote page, hidden."""
    shown = {url: page(url, entry, default=not url) for url, entry in pages().items()}
    return {**shown, VOTE: st.Page("views/vote.py", title=_("Class vote"), icon=":material/how_to_vote:",
                                   url_path=VOTE, visibility="hidden")}


def links() -> None:
    """Home's map of every page, grouped, in reading order."""
    entries, nav = pages(), navigation()
    cols = st.columns(2)  # two columns: a 1024-px projector keeps every label whole
    for k, (group, urls) in enumerate(path().items()):
        with cols[0 if k < 2 else 1]:
            st.markdown(f"**{_(group)}**")
            for url in urls:
                st.page_link(nav[url], label=_(entries[url].link), icon=entries[url].icon)


def next_link(current: str) -> None:
    """End a page (by url path) with the next one on the path (the last page points back to Home)."""
    urls = order()
    if current not in urls:
        return
    nxt = urls[(urls.index(current) + 1) % len(urls)]
    entry = pages()[nxt]
    label = _(entry.link) if nxt else _("Home: the map of every page")
    st.divider()
    st.page_link(navigation()[nxt], label=_("Next: {page}").format(page=label), icon=entry.icon)
