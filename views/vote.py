import streamlit as st

from ui import vote
from ui.i18n import _

st.title(_("Class vote"))
vote.student()
