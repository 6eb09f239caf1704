"""paradec explorer: `make run` (or `streamlit run app.py`). The sidebar is shared by every page."""
from pathlib import Path

import streamlit as st

from ui import guide, i18n, offered, predict, presenter, quiz, sidebar, style
from ui.i18n import _

ROOT = Path(__file__).resolve().parent

i18n.from_link()  # the language a link asks for, before the first string is drawn
predict.from_link()
st.set_page_config(page_title=_("paradec: parallel decoding, step by step"),
                   page_icon=str(ROOT / "assets" / "favicon.png"), layout="wide",
                   initial_sidebar_state="collapsed" if presenter.from_link() else "auto")

# The pages as ui.guide lists them: every method's from its description in paradec.catalog, then the others
offered.check_at_start()  # the operator's settings, once per process: a bad one is a line in the log
page = st.navigation(list(guide.navigation().values()))
sidebar.render()
style.compact()
page.run()
quiz.page_end(page.url_path)  # a method page ends with its exercises
guide.next_link(page.url_path)
