"""The guided path: the pages in the order a newcomer should read them, grouped as Home lists them,
and the "next" link every page ends with."""
from __future__ import annotations

import streamlit as st

from .i18n import N_, _

# url path -> (page file, its title in the sidebar, its icon): app.py's navigation, in the sidebar's order
PAGES = {
    "": ("views/home.py", N_("Home"), ":material/home:"),
    "ar": ("views/ar.py", N_("Autoregressive (AR)"), ":material/looks_one:"),
    "sps": ("views/sps.py", N_("Speculative sampling"), ":material/call_split:"),
    "pld": ("views/pld.py", N_("Prompt lookup"), ":material/content_copy:"),
    "jacobi": ("views/jacobi.py", N_("Jacobi decoding"), ":material/grid_on:"),
    "lookahead": ("views/lookahead.py", N_("Lookahead decoding"), ":material/manage_search:"),
    "medusa": ("views/medusa.py", N_("Medusa"), ":material/account_tree:"),
    "eagle": ("views/eagle.py", N_("EAGLE-1/2/3"), ":material/flight_takeoff:"),
    "early_exit": ("views/early_exit.py", N_("Early exit"), ":material/exit_to_app:"),
    "mirror": ("views/mirror.py", N_("Parallel draft-and-verify"), ":material/view_timeline:"),
    "arena": ("views/arena.py", N_("Arena: all methods"), ":material/sports_score:"),
    "roofline": ("views/roofline.py", N_("Roofline"), ":material/show_chart:"),
    "benchmark": ("views/benchmark.py", N_("Benchmark"), ":material/leaderboard:"),
    "tune": ("views/tune.py", N_("Tune"), ":material/tune:"),
    "numerics": ("views/numerics.py", N_("Numerics: float32 vs bfloat16"), ":material/calculate:"),
    "production": ("views/production.py", N_("Production engine"), ":material/dns:"),
    "glossary": ("views/glossary.py", N_("Glossary"), ":material/translate:"),
    "article": ("views/article.py", N_("The article, checked"), ":material/fact_check:"),
}
ICONS = {file: icon for file, __, icon in PAGES.values()}

# group -> (page file, link label): the reading order, with labels that say what each page is for
PATH = {
    N_("1. The idea"): [
        ("views/ar.py", N_("AR: one pass per token")),
        ("views/roofline.py", N_("Roofline: why that is slow")),
    ],
    N_("2. The methods"): [
        ("views/sps.py", N_("Speculative sampling")),
        ("views/pld.py", N_("Prompt lookup: copy the prompt")),
        ("views/jacobi.py", N_("Jacobi: iterate a block")),
        ("views/lookahead.py", N_("Lookahead: window + pool")),
        ("views/medusa.py", N_("Medusa: heads, a tree")),
        ("views/eagle.py", N_("EAGLE-1/2/3: feature drafts")),
        ("views/early_exit.py", N_("Early exit: own layers draft")),
        ("views/mirror.py", N_("Draft while verifying")),
    ],
    N_("3. Compare"): [
        ("views/arena.py", N_("Arena: one prompt, raced")),
        ("views/benchmark.py", N_("Benchmark: many prompts")),
        ("views/tune.py", N_("Tune: settings per task")),
    ],
    N_("4. The hardware"): [
        ("views/numerics.py", N_("Numerics: bfloat16 vs float32")),
        ("views/production.py", N_("Production engines (vLLM)")),
    ],
    N_("5. The article"): [
        ("views/glossary.py", N_("Glossary: the article's words")),
        ("views/article.py", N_("The article, checked")),
    ],
}
ORDER = ["views/home.py", *(p for group in PATH.values() for p, __ in group)]
LABELS = {p: label for group in PATH.values() for p, label in group}


def links() -> None:
    """Home's map of every page, grouped, in reading order."""
    cols = st.columns(2)  # two columns: a 1024-px projector keeps every label whole
    for k, (group, pages) in enumerate(PATH.items()):
        with cols[0 if k < 2 else 1]:
            st.markdown(f"**{_(group)}**")
            for path, label in pages:
                st.page_link(path, label=_(label), icon=ICONS[path])


def next_link(current: str) -> None:
    """End a page with the next one on the path (the last page points back to Home)."""
    if current not in ORDER:
        return
    k = ORDER.index(current)
    nxt = ORDER[(k + 1) % len(ORDER)]
    label = _(LABELS[nxt]) if nxt in LABELS else _("Home: the map of every page")
    st.divider()
    st.page_link(nxt, label=_("Next: {page}").format(page=label), icon=ICONS[nxt])
