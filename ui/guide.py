"""The guided path: the pages in the order a newcomer should read them, grouped as Home lists them,
and the "next" link every page ends with."""
from __future__ import annotations

import streamlit as st

# group -> (page file, link label, icon)
PATH = {
    "1. The idea": [
        ("pages/ar.py", "Autoregressive: one pass per token, the baseline", ":material/looks_one:"),
        ("pages/roofline.py", "Roofline: why that wastes the hardware", ":material/show_chart:"),
    ],
    "2. The methods": [
        ("pages/sps.py", "Speculative sampling: a draft model + one verify pass", ":material/call_split:"),
        ("pages/pld.py", "Prompt lookup: drafts copied from the prompt", ":material/content_copy:"),
        ("pages/jacobi.py", "Jacobi: guess a block, iterate to a fixed point", ":material/grid_on:"),
        ("pages/lookahead.py", "Lookahead: a Jacobi window + an n-gram pool", ":material/manage_search:"),
        ("pages/medusa.py", "Medusa: heads on the target, a tree of guesses", ":material/account_tree:"),
        ("pages/eagle.py", "EAGLE-1/2/3: feature-level drafting, dynamic trees", ":material/flight_takeoff:"),
        ("pages/early_exit.py", "Early exit: the target's first layers draft", ":material/exit_to_app:"),
        ("pages/mirror.py", "Parallel draft-and-verify: drafting while verifying", ":material/view_timeline:"),
    ],
    "3. Compare": [
        ("pages/arena.py", "Arena: every method on one prompt, raced", ":material/sports_score:"),
        ("pages/benchmark.py", "Benchmark: every method on many prompts", ":material/leaderboard:"),
    ],
    "4. The hardware": [
        ("pages/numerics.py", "Numerics: why bfloat16 can part from float32", ":material/calculate:"),
        ("pages/production.py", "Production engine: the same methods on vLLM", ":material/dns:"),
    ],
}
ORDER = ["pages/home.py", *(p for group in PATH.values() for p, _, _ in group)]
LABELS = {p: (label, icon) for group in PATH.values() for p, label, icon in group}


def links() -> None:
    """Home's map of every page, grouped, in reading order."""
    cols = st.columns(len(PATH))
    for col, (group, pages) in zip(cols, PATH.items()):
        with col:
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
