"""paradec explorer: `make run` (or `streamlit run app.py`). The sidebar is shared by every page."""
from pathlib import Path

import streamlit as st

from ui import guide, presenter, sidebar, style

ROOT = Path(__file__).resolve().parent

st.set_page_config(page_title="paradec: parallel decoding, step by step",
                   page_icon=str(ROOT / "assets" / "favicon.png"), layout="wide",
                   initial_sidebar_state="collapsed" if presenter.from_link() else "auto")

FILES = {}  # url path -> page file, for the "next" link every page ends with


def _page(file: str, title: str, icon: str, url_path: str | None = None, default: bool = False):
    FILES[url_path or ""] = file
    return st.Page(file, title=title, icon=icon, url_path=url_path, default=default)


PAGES = [
    _page("views/home.py", title="Home", icon=":material/home:", default=True),
    _page("views/ar.py", title="Autoregressive (AR)", icon=":material/looks_one:", url_path="ar"),
    _page("views/sps.py", title="Speculative sampling", icon=":material/call_split:", url_path="sps"),
    _page("views/pld.py", title="Prompt lookup", icon=":material/content_copy:", url_path="pld"),
    _page("views/jacobi.py", title="Jacobi decoding", icon=":material/grid_on:", url_path="jacobi"),
    _page("views/lookahead.py", title="Lookahead decoding", icon=":material/manage_search:", url_path="lookahead"),
    _page("views/medusa.py", title="Medusa", icon=":material/account_tree:", url_path="medusa"),
    _page("views/eagle.py", title="EAGLE-1/2/3", icon=":material/flight_takeoff:", url_path="eagle"),
    _page("views/early_exit.py", title="Early exit", icon=":material/exit_to_app:", url_path="early_exit"),
    _page("views/mirror.py", title="Parallel draft-and-verify", icon=":material/view_timeline:", url_path="mirror"),
    _page("views/arena.py", title="Arena: all methods", icon=":material/sports_score:", url_path="arena"),
    _page("views/roofline.py", title="Roofline", icon=":material/show_chart:", url_path="roofline"),
    _page("views/benchmark.py", title="Benchmark", icon=":material/leaderboard:", url_path="benchmark"),
    _page("views/tune.py", title="Tune", icon=":material/tune:", url_path="tune"),
    _page("views/numerics.py", title="Numerics: float32 vs bfloat16", icon=":material/calculate:", url_path="numerics"),
    _page("views/production.py", title="Production engine", icon=":material/dns:", url_path="production"),
]

page = st.navigation(PAGES)
sidebar.render()
style.compact()
page.run()
guide.next_link(FILES.get(page.url_path, ""))
