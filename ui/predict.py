"""Predict mode: before the player reveals a verify pass, it asks what the target will do (paradec.learn.questions),
waits for the answer, then shows the outcome, why, and the score. A toggle in the sidebar, or `?predict=1` in a link
(shared and classroom links keep it); without it the pages ask nothing."""
from __future__ import annotations

import streamlit as st

from .i18n import _

KEY = "predict"
FLAG = "predict"  # the URL's flag: ?predict=1


def from_link() -> bool:
    """Predict mode as the link asks (read once per session, before the sidebar draws its toggle)."""
    if KEY not in st.session_state:
        st.session_state[KEY] = st.query_params.get(FLAG) in ("1", "true", "yes")
    return st.session_state[KEY]


def on() -> bool:
    return bool(st.session_state.get(KEY))


def toggle() -> None:
    """The sidebar's switch; it keeps the URL in step, so a shared link opens in the same mode."""
    st.toggle(_("Predict mode"), key=KEY, help=_("Before each verify pass is shown, the player asks what the target "
              "will do; your answer, then the outcome, why, and your score. A link with ?predict=1 opens in it."))
    if on():
        st.query_params[FLAG] = "1"
    else:
        st.query_params.pop(FLAG, None)


def switch_on() -> None:
    """A class vote asks the room the player's questions: predict mode follows."""
    st.session_state[KEY] = True
    st.query_params[FLAG] = "1"
