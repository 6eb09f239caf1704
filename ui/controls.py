"""A page's parameter widgets, built from the method's description (paradec.catalog): the label, the help,
the range or the choices and the default come from there, so a page never repeats them. The page chooses
the layout (a column); the starting value is the device's (ui.sizing: its tuned preset, its tree sizes)."""
from __future__ import annotations

import streamlit as st

from paradec import catalog

from . import sizing
from .i18n import _


def control(method: str, name: str, where=st, value=None, high: float | None = None):
    """The widget of one parameter: a slider for a number (its range; `high` narrows it, e.g. to the target's
    layers), a select box for choices, a toggle for a flag, a text input otherwise. Keyed "method.name"."""
    p = catalog.method(method).param(name)
    value = sizing.defaults(method).get(name, p.default) if value is None else value
    # label and help are paradec.catalog's: translated here when the catalogue holds them (a bare name stays)
    label, key, tip = _(p.label) if p.label else name, f"{method}.{name}", _(p.help)
    if p.choices:
        return where.selectbox(label, p.choices, index=p.choices.index(value), key=key, help=tip)
    if p.kind is bool:
        return where.toggle(label, value, key=key, help=tip)
    if p.kind is int:
        return where.slider(label, int(p.low), int(p.high if high is None else high), int(value), key=key, help=tip)
    if p.kind is float:
        return where.slider(label, float(p.low), float(p.high if high is None else high), float(value), p.step,
                            key=key, help=tip)
    return where.text_input(label, value, key=key, help=tip)


def controls(method: str, names: list[str]) -> dict:
    """Several parameters side by side, one column each."""
    cols = st.columns(len(names))
    return {n: control(method, n, c) for n, c in zip(names, cols)}
