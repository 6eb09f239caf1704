"""Panel headers with their honesty label, and the plotly config every chart shares."""
from __future__ import annotations

import plotly.io as pio
import streamlit as st

from paradec.plots.style import FROM_RUN, MEASURED, MODEL, TEMPLATE
from paradec.stage.figure_text import translated
from paradec.stage.frames import BADGE_TEXT, MEANING

from . import presenter
from .i18n import _, lang

BADGE = {MEASURED: "red", FROM_RUN: "blue", MODEL: "violet"}
# Plotly's look for every figure the app shows, as plotly's default: a figure takes its default template when it is
# made, unvalidated, where setting one on each figure before drawing it validated and deep-copied the template
# every time (30 ms a chart; two thirds of an EAGLE page's Python time).
pio.templates.default = TEMPLATE
# The camera button of each chart saves a PNG (no server-side renderer needed).
CHART_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def header(title: str, *labels: str, help: str = "") -> None:
    """A panel's title with its honesty labels; the (?) says what the panel shows and how to read it. title and
    help come translated; the labels are identifiers, their meaning is translated here."""
    badges = " ".join(f":{BADGE[x]}-badge[{_(BADGE_TEXT[x])}]" for x in labels)
    meaning = "; ".join(f"{_(BADGE_TEXT[x])}: {_(MEANING[x])}" for x in labels)
    st.markdown(f"##### {title} {badges}", help=f"{help}\n\n({meaning})" if help else meaning)


def chart(fig, key: str) -> None:
    st.plotly_chart(translated(presenter.chart_font(fig), lang()), config=CHART_CONFIG, key=key)


# On a phone or a touch screen: plotly's toolbar (it covered titles and labels on a tap) is hidden, a wide table
# scrolls inside its own box instead of widening the page, and every control is at least 44 px high, a finger's.
TOUCH = ("@media (pointer:coarse),(max-width:640px){.modebar-container{display:none!important}"  # not taught: CSS
         "[data-testid='stMarkdownContainer'] table{display:block;overflow-x:auto;max-width:100%}"
         "[data-testid^='stBaseButton'],[data-testid='stPageLink'] a,[data-testid='stPopover'] button,"
         "[data-testid='stRadio'] label,[data-testid='stCheckbox'] label,[data-baseweb='select']>div,"
         "[data-baseweb='select'] button,[data-testid='stSelectbox'] button{min-height:44px}"
         "[data-testid='stTooltipHoverTarget'] button,"
         "[data-testid='stExpandSidebarButton'],[data-testid='stMainMenuButton'],"
         "[data-testid='stSidebarCollapseButton'] button{min-height:44px;min-width:44px}}"
         # the glossary on a phone: each term a block of its four cells, none cut or hidden beside the screen
         "@media (max-width:640px){[class*='st-key-pd-glossary'] :is(table,tbody,tr,td){display:block}"
         "[class*='st-key-pd-glossary'] table{overflow:visible}[class*='st-key-pd-glossary'] thead{display:none}"
         "[class*='st-key-pd-glossary'] tr{border-bottom:1px solid #ddd;padding:6px 0}"
         "[class*='st-key-pd-glossary'] td{border:none;padding:2px 0}}")


def compact() -> None:
    """Less empty space above the title, so the player fits a 1280x720 projector. No CSS transitions: a rerun
    faded what it had not redrawn yet over a second, and repainting a page of charts for every frame of the
    fade took a core from the machine the browser runs on; a live run on a 2-core machine, browser included,
    decoded at half speed while it lasted. No running man: Streamlit redraws him five times a second while the
    page runs, a repaint each time on those cores during a live run (its Stop button still says it runs). A live
    run's progress bar floats over the page's top: inserted above the title, it moved the whole page down and
    made the browser lay it out and paint it again, on those cores, and back when it went."""
    st.html("<style>[data-testid='stMainBlockContainer']{padding-top:3.2rem;padding-bottom:2rem}"
            "h1{padding-top:0.2rem!important;font-size:1.9rem!important}"
            "*,*::before,*::after{transition:none!important}"
            "[data-testid='stStatusWidgetRunningIcon']{display:none}"
            "[class*='st-key-pd-progress']{position:fixed;top:0.7rem;left:50%;transform:translateX(-50%);"
            "width:min(34rem,60vw);z-index:1000000}[class*='st-key-pd-progress']:has([data-testid='stProgress'])"
            "{background:var(--background-color,#fff);padding:0.3rem 0.8rem;border-radius:0.5rem;"
            "box-shadow:0 2px 12px rgba(0,0,0,0.18)}" + TOUCH + "</style>")
