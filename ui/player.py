"""The step player: first, back, play/pause, next, last, a speed choice and a scrubber, all buttons (no keyboard).

Playing is a fragment that reruns itself every 1/speed seconds and moves one step, so only
the replay redraws. The step lives in the URL (?step=N, 1-based) so a teacher can link it."""
from __future__ import annotations

import time

import streamlit as st

SPEEDS = [0.5, 1.0, 2.0, 4.0]  # steps per second


def _k(ns: str, what: str) -> str:
    return f"{ns}.{what}"


def _set(ns: str, step: int) -> None:
    st.session_state[_k(ns, "step")] = step


def init(ns: str, n: int) -> None:
    """Start at the URL's step the first time this page is shown; clamp to the trace."""
    key = _k(ns, "step")
    if key not in st.session_state:
        try:
            st.session_state[key] = int(st.query_params.get("step", 1))
        except ValueError:
            st.session_state[key] = 1
    st.session_state[key] = min(max(1, st.session_state[key]), n)


def interval(ns: str) -> float | None:
    """Seconds between automatic steps while playing, None when paused."""
    if not st.session_state.get(_k(ns, "playing")):
        return None
    speed = st.session_state.get(_k(ns, "speed"), 1.0)
    st.session_state[_k(ns, "timer_speed")] = speed
    return 1.0 / speed


def _tick(ns: str, n: int) -> None:
    """While playing, advance once per interval; stop (and drop the timer) at the last step."""
    every = interval(ns)
    if every is None:
        return
    now = time.monotonic()
    if now - st.session_state.get(_k(ns, "t"), 0.0) < 0.8 * every:
        return
    st.session_state[_k(ns, "t")] = now
    key = _k(ns, "step")
    if st.session_state[key] >= n:
        st.session_state[_k(ns, "playing")] = False
        st.rerun(scope="app")
    st.session_state[key] += 1


def controls(ns: str, n: int) -> int:
    """Draw the player; returns the 0-based step index to show."""
    init(ns, n)
    _tick(ns, n)
    key, playing = _k(ns, "step"), bool(st.session_state.get(_k(ns, "playing")))
    step = st.session_state[key]
    c = st.columns([1, 1, 1.1, 1, 1, 2], vertical_alignment="bottom")
    c[0].button("First", key=_k(ns, "first"), on_click=_set, args=(ns, 1), icon=":material/skip_previous:",
                disabled=step == 1)
    c[1].button("Back", key=_k(ns, "back"), on_click=_set, args=(ns, step - 1), icon=":material/chevron_left:",
                disabled=step == 1)
    if c[2].button("Pause" if playing else "Play", key=_k(ns, "play"), type="primary", disabled=n == 1,
                   icon=":material/pause:" if playing else ":material/play_arrow:"):
        st.session_state[_k(ns, "playing")] = not playing
        if not playing and step >= n:
            _set(ns, 1)  # play from the start once the end is reached
        st.rerun(scope="app")  # the play timer is set when the whole page runs
    c[3].button("Next", key=_k(ns, "next"), on_click=_set, args=(ns, step + 1), icon=":material/chevron_right:",
                disabled=step >= n)
    c[4].button("Last", key=_k(ns, "last"), on_click=_set, args=(ns, n), icon=":material/skip_next:",
                disabled=step >= n)
    speed = c[5].select_slider("Speed (steps/s)", SPEEDS, value=1.0, key=_k(ns, "speed"))
    if playing and speed != st.session_state.get(_k(ns, "timer_speed")):
        st.rerun(scope="app")  # restart the timer at the new speed
    if n > 1:
        st.slider("Step", 1, n, key=key, label_visibility="collapsed")
    st.query_params["step"] = str(st.session_state[key])
    return st.session_state[key] - 1
