"""The guided path: the pages in the order a newcomer should read them, grouped as Home lists them,
and the "next" link every page ends with."""
from __future__ import annotations

import streamlit as st

from .i18n import N_, _

# group -> (page file, link label, icon)
PATH = {
    N_("1. The idea"): [
        ("views/ar.py", N_("AR: one pass per token"), ":material/looks_one:"),
        ("views/roofline.py", N_("Roofline: why that is slow"), ":material/show_chart:"),
    ],
    N_("2. The methods"): [
        ("views/sps.py", N_("Speculative sampling"), ":material/call_split:"),
        ("views/pld.py", N_("Prompt lookup: copy the prompt"), ":material/content_copy:"),
        ("views/jacobi.py", N_("Jacobi: iterate a block"), ":material/grid_on:"),
        ("views/lookahead.py", N_("Lookahead: window + pool"), ":material/manage_search:"),
        ("views/medusa.py", N_("Medusa: heads, a tree"), ":material/account_tree:"),
        ("views/eagle.py", N_("EAGLE-1/2/3: feature drafts"), ":material/flight_takeoff:"),
        ("views/early_exit.py", N_("Early exit: own layers draft"), ":material/exit_to_app:"),
        ("views/mirror.py", N_("Draft while verifying"), ":material/view_timeline:"),
    ],
    N_("3. Compare"): [
        ("views/arena.py", N_("Arena: one prompt, raced"), ":material/sports_score:"),
        ("views/benchmark.py", N_("Benchmark: many prompts"), ":material/leaderboard:"),
        ("views/tune.py", N_("Tune: settings per task"), ":material/tune:"),
    ],
    N_("4. The hardware"): [
        ("views/numerics.py", N_("Numerics: bfloat16 vs float32"), ":material/calculate:"),
        ("views/production.py", N_("Production engines (vLLM)"), ":material/dns:"),
    ],
    N_("5. The article"): [
        ("views/glossary.py", N_("Glossary: the article's words"), ":material/translate:"),
        ("views/article.py", N_("The article, checked"), ":material/fact_check:"),
    ],
}
ORDER = ["views/home.py", *(p for group in PATH.values() for p, __, ___ in group)]
LABELS = {p: (label, icon) for group in PATH.values() for p, label, icon in group}


def links() -> None:
    """Home's map of every page, grouped, in reading order."""
    cols = st.columns(2)  # two columns: a 1024-px projector keeps every label whole
    for k, (group, pages) in enumerate(PATH.items()):
        with cols[0 if k < 2 else 1]:
            st.markdown(f"**{_(group)}**")
            for path, label, icon in pages:
                st.page_link(path, label=_(label), icon=icon)


def next_link(current: str) -> None:
    """End a page with the next one on the path (the last page points back to Home)."""
    if current not in ORDER:
        return
    k = ORDER.index(current)
    nxt = ORDER[(k + 1) % len(ORDER)]
    if nxt in LABELS:
        label, icon = _(LABELS[nxt][0]), LABELS[nxt][1]
    else:
        label, icon = _("Home: the map of every page"), ":material/home:"
    st.divider()
    st.page_link(nxt, label=_("Next: {page}").format(page=label), icon=icon)
