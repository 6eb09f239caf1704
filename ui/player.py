"""The step player. It runs in the browser (paradec/web/player.js and its stage, paradec/web/player_stage.js: a
Streamlit v2 component): the buttons, the speed, the scrubber, the step's story and the stage's figures all change
together there, from frames precomputed for every step, so playing keeps up with the chosen speed and never waits on the
server. Keys: Space plays or pauses, ← and → step, Home and End go to the first and last step.
When the player stops, it sends its step back: the panels Python draws (the details) follow, and
the step lives in the URL (?step=N, 1-based) so a teacher can link it."""
from __future__ import annotations

from functools import partial

import streamlit as st

from paradec import web
from paradec.stage import player as player_words

from . import vote
from .i18n import lang, words

_JS, _CSS = web.text(web.PLAYER_JS), web.text(web.PLAYER_CSS)  # paradec/web: the same files the static site loads
_PLAYER = st.components.v2.component("paradec.player", js=_JS, css=_CSS, isolate_styles=False)


def labels() -> dict[str, str]:
    """Every word the browser's player shows, its questions' included, in the visitor's language."""
    return player_words.labels(words())


def _k(ns: str, what: str) -> str:
    return f"{ns}.{what}"


def replaces(ns: str, shown: list) -> bool:
    """Whether the trace `shown` names replaces another in this player (a live run, an import, another recorded
    trace): its details then follow once the browser has drawn it (show's `wait`)."""
    return st.session_state.get(_k(ns, "shown"), shown) != shown


def init(ns: str, n: int, start: int = 1, shown: list | None = None) -> int:
    """The step (1-based) to show: the URL's the first time this page is shown, else `start`; clamped.
    shown names the trace: one that replaces another here (a live run, an import) opens on `start`,
    not on the step the last one was left at."""
    key = _k(ns, "step")
    if shown is not None:
        if replaces(ns, shown):
            st.session_state[key] = start
        st.session_state[_k(ns, "shown")] = shown
    if key not in st.session_state:
        try:
            st.session_state[key] = int(st.query_params.get("step", start))
        except ValueError:
            st.session_state[key] = start
    st.session_state[key] = min(max(1, st.session_state[key]), n)
    return st.session_state[key]


def _moved(ns: str) -> None:
    """The browser's player stopped on a step: [step, nonce] (the nonce makes every report a change)."""
    value = (st.session_state.get(_k(ns, "player")) or {}).get("step")
    if isinstance(value, list) and value and isinstance(value[0], int):
        st.session_state[_k(ns, "step")] = value[0]


def show(ns: str, n: int, stage: dict, start: int = 1, presenter: bool = False, wait: bool = False,
         predict: dict | None = None) -> int:
    """Draw the player over `stage` (ui.stage.build); returns the 0-based step the details show. presenter: the
    draft tree and the mask beside the controls, story and token stream, all on a 1024x768 projector at once.
    wait: the page draws no details this time; the browser reruns it once the player has drawn this trace.
    predict: predict mode's settings (ui.vote.player_data; None: off): the frames' questions are asked."""
    step = init(ns, n, start)
    data = {**stage, "key": f"{stage['key']}:{lang()}", "ns": ns, "step": step, "presenter": presenter,
            "labels": labels(), "wait": wait,
            "predict": predict}  # the key names the language: another one is other frames and words
    _PLAYER(key=_k(ns, "player"), data=data, on_step_change=partial(_moved, ns), on_drawn_change=_drawn,
            on_reveal_change=partial(_revealed, ns))
    st.query_params["step"] = str(st.session_state[_k(ns, "step")])
    return st.session_state[_k(ns, "step")] - 1


def _revealed(ns: str) -> None:
    """A class vote's presenter revealed the answer in the player: [step, nonce]; the room reveals it too."""
    value = (st.session_state.get(_k(ns, "player")) or {}).get("reveal")
    if isinstance(value, list) and value and isinstance(value[0], int):
        vote.reveal(value[0])


def _drawn() -> None:
    """The browser drew a trace the page waited on (show's `wait`): the rerun this report makes draws the details."""


def details(ns: str):
    """The container for the panels Python draws at the player's step (dimmed while the player plays)."""
    return st.container(key=f"pd-details-{ns}")
