"""paradec explorer: `make run` (or `streamlit run app.py`). The sidebar is shared by every page."""
from pathlib import Path

import streamlit as st

from ui import guide, i18n, offered, presenter, sidebar, style
from ui.i18n import _

ROOT = Path(__file__).resolve().parent

i18n.from_link()  # the language a link asks for, before the first string is drawn
st.set_page_config(page_title=_("paradec: parallel decoding, step by step"),
                   page_icon=str(ROOT / "assets" / "favicon.png"), layout="wide",
                   initial_sidebar_state="collapsed" if presenter.from_link() else "auto")

# The pages as ui.guide lists them (home: the default, at the root)
PAGES = [st.Page(file, title=_(title), icon=icon, url_path=path or None, default=not path)
         for path, (file, title, icon) in guide.PAGES.items()]

offered.check_at_start()  # the operator's settings, once per process: a bad one is a line in the log
page = st.navigation(PAGES)
sidebar.render()
style.compact()
page.run()
guide.next_link(guide.PAGES[page.url_path][0] if page.url_path in guide.PAGES else "")
