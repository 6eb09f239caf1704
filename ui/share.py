"""Sharing a moment: the trace as JSON, the figures as HTML (PNG: each chart's camera button),
and a classroom link that opens this page, with these settings, at this step."""
from __future__ import annotations

import streamlit as st

from paradec.traces.trace import Trace

from . import classroom
from .i18n import _
from .sidebar import current


def figures_html(figs: dict, title: str) -> str:
    """One self-contained HTML file (plotly.js inlined once, so it opens offline)."""
    parts = [f"<h2>{name}</h2>" + fig.to_html(full_html=False, include_plotlyjs=(k == 0))
             for k, (name, fig) in enumerate(figs.items())]
    return f"<html><head><meta charset='utf-8'><title>{title}</title></head><body>{''.join(parts)}</body></html>"


def share(trace: Trace, figs: dict, ns: str, params: dict | None = None) -> None:
    with st.expander(_("Share this screen: a classroom link, the trace, the figures")):
        c1, c2 = st.columns(2)
        c1.download_button(_("Trace (JSON)"), trace.to_json, f"paradec-{trace.method}.json", "application/json",
                           key=f"{ns}.dl_json", on_click="ignore")
        step = st.query_params.get("step", "1")
        title = _("paradec {method} step {step}").format(method=trace.method, step=step)
        c2.download_button(_("Figures of this step (HTML)"), lambda: figures_html(figs, title),
                           f"paradec-{trace.method}-step{step}.html", "text/html", key=f"{ns}.dl_html",
                           on_click="ignore")
        st.caption(_("PNG: the camera icon at the top right of each chart saves it."))
        url, whole = classroom.link((st.context.url or "").split("?")[0], current(), params or {},
                                    st.query_params.to_dict())
        st.markdown(_("**Classroom link** (copy it with the icon on the right): every student who opens it gets "
                      "this screen: this page, run, step and language (and, for a live run, its prompt, sampling and "
                      "parameters)."))
        st.code(url, language=None)
        if not whole:
            st.caption(_("The prompt is longer than {n} characters: the link leaves it out.").format(
                n=classroom.MAX_PROMPT))
