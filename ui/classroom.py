"""Classroom links: a teacher's preset (prompt, sampling, trace source, the method's parameters,
the recorded trace and the step) carried in the URL, so every student who opens the link sees
the same moment. The link is read once per browser session, before the widgets it fills are
drawn; afterwards the students' own clicks rule (the step keeps following the URL: ui.player)."""
from __future__ import annotations

import json
import math
from urllib.parse import urlencode

import streamlit as st
from streamlit.errors import StreamlitAPIException

from paradec import catalog
from paradec.costs import measured

from .i18n import _

SIDEBAR = {"temperature": float, "top_p": float, "max_new": int, "seed": int}  # query name = widget key after "sb."
SOURCES = ("recorded", "live")
WEIGHTS = tuple(measured.PRECISIONS)  # a live run's target weights, as the sidebar's radio holds them
MAX_PROMPT = 2000  # longer prompts stay out of links (browsers and proxies cut long URLs), and are not read from one
MAX_PARAMS = 8000  # characters of a link's parameters (Medusa's 63-node tree takes 500)
DONE = "classroom.done"  # session state: the parts of the link already applied
NOTE = "classroom.note"


def _once(part: str) -> bool:
    """True the first time this session asks for `part`."""
    done = st.session_state.setdefault(DONE, set())
    first = part not in done
    done.add(part)
    return first


def apply_sidebar(presets: dict[str, str], custom: str, limits: dict[str, tuple], models: list[str]) -> None:
    """Fill the sidebar's widgets from the link (values clamped to the widgets' limits; a model only
    when the operator offers it: a link never makes the server load or download one)."""
    if not _once("sidebar"):
        return
    q = st.query_params
    if len(q.get("prompt", "")) > MAX_PROMPT:
        st.session_state[NOTE] = _("The link's prompt is longer than {n} characters: not used.").format(n=MAX_PROMPT)
    elif q.get("prompt", "").strip():
        preset = next((name for name, text in presets.items() if text == q["prompt"]), None)
        st.session_state["sb.preset"] = preset or custom
        if not preset:
            st.session_state["sb.prompt"] = q["prompt"]
    for name, kind in SIDEBAR.items():
        try:
            value = kind(q[name])
        except (KeyError, ValueError):
            continue  # absent or not a number: the widget keeps its default
        lo, hi = limits[name]
        st.session_state[f"sb.{name}"] = min(max(lo, value), hi)
    if q.get("source") in SOURCES:
        st.session_state["sb.source"] = q["source"]
    if q.get("weights") in WEIGHTS:
        st.session_state["sb.weights"] = q["weights"]
    if q.get("model", "") in models:
        st.session_state["sb.model"] = q["model"]
    elif q.get("model", "").strip():
        st.session_state[NOTE] = _("The link's model is not offered here: the embedded model is used.")


def apply_params(method: str) -> None:
    """Fill the method's parameter widgets (key "<method>.<parameter>") from the link's JSON: only the
    method's own parameters (never a button's, an upload's or the step's key), each of its widget's type."""
    if not _once(f"params.{method}"):
        return
    text = st.query_params.get("params", "{}")
    try:
        params = json.loads(text) if len(text) <= MAX_PARAMS else None
    except (json.JSONDecodeError, RecursionError):  # a hand-made link may nest "[[[[..." past the stack
        return
    if not isinstance(params, dict):
        return
    known = {p.name: p for p in catalog.method(method).params}
    fits = {name: _typed(known[name], value) for name, value in params.items() if name in known}
    fits = {name: value for name, value in fits.items() if value is not None}
    for name, value in fits.items():
        st.session_state[f"{method}.{name}"] = value
    st.session_state[f"classroom.{method}"] = list(fits)
    if len(fits) < len(params):
        st.session_state[NOTE] = _("Some of the link's parameters are not settings of {method} or not of their "
                                   "kind: left out.").format(method=method)


def _typed(p: catalog.Param, value):
    """value as the parameter's widget holds it, or None when it is not of the parameter's kind (a widget given
    a string for a number fails while it draws). Ranges and choices are the widgets' own check (guarded)."""
    if p.kind is float and type(value) in (int, float) and math.isfinite(value):
        return float(value)
    if type(value) is p.kind and (p.kind is not str or len(value) <= MAX_PARAMS):  # type(): true is not 1
        return value
    return None


def guarded(method: str, draw):
    """draw() the parameter widgets; if the link's values do not fit them (out of range, not an
    option), drop those values, note it, and draw the page again with the defaults."""
    try:
        return draw()
    except StreamlitAPIException:
        names = st.session_state.pop(f"classroom.{method}", None)
        if not names:
            raise
        for name in names:
            st.session_state.pop(f"{method}.{name}", None)
        st.session_state[NOTE] = _("The link's parameters for {method} do not fit this page: defaults used.").format(
            method=method)
        st.rerun()


def note() -> None:
    if NOTE in st.session_state:
        st.warning(st.session_state.pop(NOTE))


VIEW = ("step", "trace", "version", "lang", "present", "predict")  # what the screen shows, as the page keeps it in
# its own URL: the step, the recorded run, EAGLE's version, the language, presenter and predict mode


def link(base: str, settings, params: dict, shown: dict) -> tuple[str, bool]:
    """The classroom link that opens the screen as it is: the view (shown: the page's own query, VIEW's names) and,
    for a live run, what it was decoded with (a recorded run replays its own prompt and settings, which the link
    then leaves out). False when the prompt was too long to carry."""
    q = {name: shown[name] for name in VIEW if name in shown}
    if not settings.live:
        return f"{base}?{urlencode(q)}", True
    q |= {name: getattr(settings, attr) for name, attr in
          [("temperature", "temperature"), ("top_p", "top_p"), ("max_new", "max_new_tokens"), ("seed", "seed")]}
    q["source"] = SOURCES[settings.live]
    fits = len(settings.prompt) <= MAX_PROMPT
    if fits:
        q["prompt"] = settings.prompt
    if settings.model != "embedded":
        q["model"] = settings.model
    if settings.weights:
        q["weights"] = settings.weights
    q["params"] = json.dumps(params, sort_keys=True)
    return f"{base}?{urlencode(q)}", fits
