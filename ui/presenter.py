"""Presenter mode, for a projected classroom screen: the sidebar starts collapsed, each page leads with
three lines of what to notice, the player's tree and mask sit beside its controls, intros and details
fold away, and charts use larger text. A toggle in the sidebar, or `?present=1` in a link."""
from __future__ import annotations

from contextlib import nullcontext

import streamlit as st

from .i18n import _

KEY = "presenter"
FLAG = "present"  # the URL's flag: ?present=1
CHART_FONT = 16  # px: read from the back of a classroom


def from_link() -> bool:
    """Presenter mode as the link asks (read before the page is configured, so the sidebar can start folded)."""
    if KEY not in st.session_state:
        st.session_state[KEY] = st.query_params.get(FLAG) in ("1", "true", "yes")
    return st.session_state[KEY]


def on() -> bool:
    return bool(st.session_state.get(KEY))


def toggle() -> None:
    """The sidebar's switch; it keeps the URL in step, so a shared link opens in the same mode."""
    st.toggle(_("Presenter mode"), key=KEY, help=_("For a projector: three lines of what to notice, the tree and "
              "mask beside the player, details folded, larger chart text. A link with ?present=1 opens in it."))
    if on():
        st.query_params[FLAG] = "1"
    else:
        st.query_params.pop(FLAG, None)


def fold(label: str):
    """Where a page's long parts go: an expander, folded, in presenter mode; the page itself otherwise (label: in
    the visitor's language)."""
    return st.expander(label, expanded=False) if on() else nullcontext()


def notice(lines: tuple[str, ...]) -> None:
    """The page's three lines of what to notice, in the visitor's language."""
    if lines:
        st.info(_("**What to notice**") + "\n\n" + "\n".join(f"- {line}" for line in lines),
                icon=":material/visibility:")


def chart_font(fig):
    """Larger text on a chart in presenter mode (every size that follows the figure's base font)."""
    if on():
        fig.update_layout(font_size=CHART_FONT, title_font_size=CHART_FONT + 2)
    return fig
