"""paradec explorer: `make run` (or `streamlit run app.py`). The sidebar is shared by every page."""
from pathlib import Path

import streamlit as st

from ui import guide, i18n, presenter, sidebar, style
from ui.i18n import _

ROOT = Path(__file__).resolve().parent

i18n.from_link()  # the language a link asks for, before the first string is drawn
st.set_page_config(page_title=_("paradec: parallel decoding, step by step"),
                   page_icon=str(ROOT / "assets" / "favicon.png"), layout="wide",
                   initial_sidebar_state="collapsed" if presenter.from_link() else "auto")

FILES = {}  # url path -> page file, for the "next" link every page ends with


def _page(file: str, title: str, icon: str, url_path: str | None = None, default: bool = False):
    FILES[url_path or ""] = file
    return st.Page(file, title=title, icon=icon, url_path=url_path, default=default)


PAGES = [
    _page("views/home.py", title=_("Home"), icon=":material/home:", default=True),
    _page("views/ar.py", title=_("Autoregressive (AR)"), icon=":material/looks_one:", url_path="ar"),
    _page("views/sps.py", title=_("Speculative sampling"), icon=":material/call_split:", url_path="sps"),
    _page("views/pld.py", title=_("Prompt lookup"), icon=":material/content_copy:", url_path="pld"),
    _page("views/jacobi.py", title=_("Jacobi decoding"), icon=":material/grid_on:", url_path="jacobi"),
    _page("views/lookahead.py", title=_("Lookahead decoding"), icon=":material/manage_search:", url_path="lookahead"),
    _page("views/medusa.py", title=_("Medusa"), icon=":material/account_tree:", url_path="medusa"),
    _page("views/eagle.py", title=_("EAGLE-1/2/3"), icon=":material/flight_takeoff:", url_path="eagle"),
    _page("views/early_exit.py", title=_("Early exit"), icon=":material/exit_to_app:", url_path="early_exit"),
    _page("views/mirror.py", title=_("Parallel draft-and-verify"), icon=":material/view_timeline:", url_path="mirror"),
    _page("views/arena.py", title=_("Arena: all methods"), icon=":material/sports_score:", url_path="arena"),
    _page("views/roofline.py", title=_("Roofline"), icon=":material/show_chart:", url_path="roofline"),
    _page("views/benchmark.py", title=_("Benchmark"), icon=":material/leaderboard:", url_path="benchmark"),
    _page("views/tune.py", title=_("Tune"), icon=":material/tune:", url_path="tune"),
    _page("views/numerics.py", title=_("Numerics: float32 vs bfloat16"), icon=":material/calculate:",
          url_path="numerics"),
    _page("views/production.py", title=_("Production engine"), icon=":material/dns:", url_path="production"),
    _page("views/glossary.py", title=_("Glossary"), icon=":material/translate:", url_path="glossary"),
    _page("views/article.py", title=_("The article, checked"), icon=":material/fact_check:", url_path="article"),
]

page = st.navigation(PAGES)
sidebar.render()
style.compact()
page.run()
guide.next_link(FILES.get(page.url_path, ""))
