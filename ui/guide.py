"""The guided path: the pages in the order a newcomer should read them, grouped as Home lists them,
and the "next" link every page ends with."""
from __future__ import annotations

import streamlit as st

# group -> (page file, link label, icon)
PATH = {
    "1. The idea": [
        ("views/ar.py", "AR: one pass per token", ":material/looks_one:"),
        ("views/roofline.py", "Roofline: why that is slow", ":material/show_chart:"),
    ],
    "2. The methods": [
        ("views/sps.py", "Speculative sampling", ":material/call_split:"),
        ("views/pld.py", "Prompt lookup: copy the prompt", ":material/content_copy:"),
        ("views/jacobi.py", "Jacobi: iterate a block", ":material/grid_on:"),
        ("views/lookahead.py", "Lookahead: window + pool", ":material/manage_search:"),
        ("views/medusa.py", "Medusa: heads, a tree", ":material/account_tree:"),
        ("views/eagle.py", "EAGLE-1/2/3: feature drafts", ":material/flight_takeoff:"),
        ("views/early_exit.py", "Early exit: own layers draft", ":material/exit_to_app:"),
        ("views/mirror.py", "Draft while verifying", ":material/view_timeline:"),
    ],
    "3. Compare": [
        ("views/arena.py", "Arena: one prompt, raced", ":material/sports_score:"),
        ("views/benchmark.py", "Benchmark: many prompts", ":material/leaderboard:"),
        ("views/tune.py", "Tune: settings per task", ":material/tune:"),
    ],
    "4. The hardware": [
        ("views/numerics.py", "Numerics: bfloat16 vs float32", ":material/calculate:"),
        ("views/production.py", "Production engines (vLLM)", ":material/dns:"),
    ],
}
ORDER = ["views/home.py", *(p for group in PATH.values() for p, _, _ in group)]
LABELS = {p: (label, icon) for group in PATH.values() for p, label, icon in group}


def links() -> None:
    """Home's map of every page, grouped, in reading order."""
    cols = st.columns(2)  # two columns: a 1024-px projector keeps every label whole
    for k, (group, pages) in enumerate(PATH.items()):
        with cols[0 if k < 2 else 1]:
            st.markdown(f"**{group}**")
            for path, label, icon in pages:
                st.page_link(path, label=label, icon=icon)


def next_link(current: str) -> None:
    """End a page with the next one on the path (the last page points back to Home)."""
    if current not in ORDER:
        return
    k = ORDER.index(current)
    nxt = ORDER[(k + 1) % len(ORDER)]
    label, icon = LABELS.get(nxt, ("Home: the map of every page", ":material/home:"))
    st.divider()
    st.page_link(nxt, label=f"Next: {label}", icon=icon)
