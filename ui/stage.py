"""The browser's player's data (paradec/web/player.js) in the app: the frames of every step (paradec.stage.frames
builds them, in the visitor's language: the static site's are the same), cached per trace and language and sent as
JSON with the stage's boxes."""
from __future__ import annotations

import functools
import json
from collections.abc import Callable

import streamlit as st

from paradec.stage import frames as made
from paradec.stage.frames import NO_EXTRA, STREAM, Extra, Panel, Shell, frame, frames, panels, template
from paradec.traces.trace import Trace

from .i18n import _, lang, words
from .learn import _link

__all__ = ["NO_EXTRA", "STREAM", "Extra", "Panel", "build", "fig_json", "frames_json", "template", "window"]
WINDOW = 64  # steps drawn ahead at once: every step of a recorded trace, a block of a long live one


def _frames(key: str, _owner: object, _make: Callable[[], list[dict]]) -> tuple[object, str]:
    return _owner, json.dumps(_make(), separators=(",", ":"))


@functools.cache
def _cached(spinner: str):
    """The frames' cache, saying `spinner` while it fills: one per language for what it says, one store for all
    (streamlit names a cache by its function's code)."""
    return st.cache_resource(max_entries=24, show_spinner=spinner)(_frames)


def frames_json(key: str, owner: object, make: Callable[[], list[dict]]) -> str:
    """make()'s frames as JSON, computed once per key and language (the frames' words are the visitor's). The
    key names `owner` (a trace, by id and size): the owner is kept beside its frames, so an object that reuses a
    freed id is drawn afresh."""
    kept, made = _cached(_("Preparing every step for the player…"))(f"{key}:{lang()}", owner, make)
    return made if kept is owner else json.dumps(make(), separators=(",", ":"))


def fig_json(fig) -> dict:
    """A figure as the player's plain JSON, its words in the visitor's language."""
    return made.fig_json(fig, lang())


def window(i: int, n: int) -> range:
    """The steps whose frames go to the browser with step i (0-based): all of a short trace, a block of a long one."""
    lo = i // WINDOW * WINDOW
    return range(lo, min(n, lo + WINDOW))


def build(trace: Trace, ns: str, show_rejected: bool, extra: Extra, i: int, selected: int | None,
          predict: bool = False) -> dict:
    """The player's data: frames for the steps around step i (cached per trace), the boxes, and step i's
    frame redrawn with the node picked below highlighted. predict: frames with their questions (predict mode)."""
    steps = window(i, len(trace.steps))
    shell = Shell(words(), _link, show_rejected, extra)
    key = (f"{ns}:{id(trace)}:{trace.method}:{len(trace.steps)}:{trace.wall_s}:{show_rejected}:{steps.start}"
           f"{':predict' if predict else ''}")
    made = frames_json(key, trace, lambda: frames(trace, steps, shell, predict))
    return {"key": key, "frames": made, "template": template(), "offset": steps.start, "n": len(trace.steps),
            "panels": panels(trace, extra, shell.tr),
            "override": frame(trace, i, shell, selected, predict) if selected is not None else None}
