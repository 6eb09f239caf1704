"""paradec explorer: `make run` (or `streamlit run app.py`). The sidebar is shared by every page."""
from pathlib import Path

import streamlit as st

from ui import sidebar, style

ROOT = Path(__file__).resolve().parent

st.set_page_config(page_title="paradec: parallel decoding, step by step",
                   page_icon=str(ROOT / "assets" / "favicon.png"), layout="wide")

PAGES = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("pages/ar.py", title="Autoregressive (AR)", icon=":material/looks_one:", url_path="ar"),
    st.Page("pages/sps.py", title="Speculative sampling", icon=":material/call_split:", url_path="sps"),
    st.Page("pages/pld.py", title="Prompt lookup", icon=":material/content_copy:", url_path="pld"),
    st.Page("pages/jacobi.py", title="Jacobi decoding", icon=":material/grid_on:", url_path="jacobi"),
    st.Page("pages/lookahead.py", title="Lookahead decoding", icon=":material/manage_search:", url_path="lookahead"),
    st.Page("pages/medusa.py", title="Medusa", icon=":material/account_tree:", url_path="medusa"),
    st.Page("pages/eagle.py", title="EAGLE-1/2/3", icon=":material/flight_takeoff:", url_path="eagle"),
    st.Page("pages/early_exit.py", title="Early exit", icon=":material/exit_to_app:", url_path="early_exit"),
    st.Page("pages/mirror.py", title="Parallel draft-and-verify", icon=":material/view_timeline:", url_path="mirror"),
    st.Page("pages/arena.py", title="Arena: all methods", icon=":material/sports_score:", url_path="arena"),
    st.Page("pages/roofline.py", title="Roofline", icon=":material/show_chart:", url_path="roofline"),
    st.Page("pages/benchmark.py", title="Benchmark", icon=":material/leaderboard:", url_path="benchmark"),
    st.Page("pages/tune.py", title="Tune", icon=":material/tune:", url_path="tune"),
    st.Page("pages/production.py", title="Production engine", icon=":material/dns:", url_path="production"),
]

page = st.navigation(PAGES)
sidebar.render()
style.compact()
page.run()
