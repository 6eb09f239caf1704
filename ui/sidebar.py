"""The shared sidebar: model, prompt, sampling settings and the trace source.
app.py draws it on every run; pages read the result with current()."""
from __future__ import annotations

import streamlit as st

from . import classroom, gpu_presets, offered, presenter
from .presets import CUSTOM, PRESETS
from .settings import Settings

KEY = "_settings"
BOX = "_sb.recorded"  # the sidebar's box for the recorded run's own settings
LIMITS = {"temperature": (0.0, 1.5), "top_p": (0.05, 1.0), "max_new": (8, 256), "seed": (0, 2**31 - 1)}


def render() -> Settings:
    models = offered.models(offered.fetched().get("model", []))
    classroom.apply_sidebar(PRESETS, CUSTOM, LIMITS, models)  # a classroom link, before the widgets it fills
    with st.sidebar:
        presenter.toggle()
        gpu_presets.use_fetched_model()
        if st.session_state.get("sb.model") not in models:  # e.g. a model the operator no longer offers
            st.session_state.pop("sb.model", None)
        live = st.radio("Trace source", ["recorded", "live"], horizontal=True, key="sb.source",
                        help="recorded: replay a real run saved in assets/traces (instant). "
                             "live: run the model on the settings below.") == "live"
        st.session_state[BOX] = st.container()  # a page names the recorded run it replays here
        if not live:
            st.caption("Greyed out below: settings for **live** runs only. A recorded run replays its own "
                       "settings; switch the trace source to live to decode with these.")
        off = not live
        preset = st.selectbox("Prompt", [*PRESETS, CUSTOM], key="sb.preset", disabled=off)
        if preset == CUSTOM:
            prompt = st.text_area("Your prompt", "Tell me a short story about a robot.", key="sb.prompt", height=90,
                                  disabled=off)
        else:
            prompt = PRESETS[preset]
            st.caption(prompt if len(prompt) < 160 else prompt[:157] + "…")
        temperature = st.slider("Temperature (0 = greedy)", *LIMITS["temperature"], 0.0, 0.05, key="sb.temperature",
                                disabled=off)
        top_p = st.slider("Top-p", *LIMITS["top_p"], 1.0, 0.05, key="sb.top_p", disabled=off)
        max_new = st.slider("Max new tokens", *LIMITS["max_new"], 48, 8, key="sb.max_new", disabled=off)
        seed = st.number_input("Seed", *LIMITS["seed"], 0, key="sb.seed", disabled=off)
        model = st.selectbox("Target model", models, key="sb.model", disabled=off,
                             help="'embedded' = the bundled SmolLM2-135M-Instruct; the operator of this app offers "
                                  f"others (environment variable {offered.MODELS}) and the GPU presets below")
        backend = _backend()
        if live and not backend:  # presets for this process's GPU; a backend has its own
            gpu_presets.render()
    settings = Settings(model, prompt, float(temperature), float(top_p), int(max_new), int(seed), live, backend)
    st.session_state[KEY] = settings
    return settings


def _backend() -> str:
    """The operator's backend (a visitor never types a URL this server would call), shown when set."""
    try:
        url = offered.backend()
    except offered.Refused as e:
        st.error(str(e))  # the operator's typo: runs stay in this process until it is fixed
        return ""
    if url:
        st.caption("Live runs go to the operator's backend (`python -m paradec serve`); 'embedded' is its own model.")
    return url


def current() -> Settings:
    return st.session_state[KEY]


def recorded(trace) -> None:
    """Say in the sidebar which settings the replayed recorded run used (the widgets are for live runs)."""
    box = st.session_state.get(BOX)
    if box is None:
        return
    s = trace.sampling
    mode = "greedy" if s.get("temperature", 0) <= 0 else f"temperature {s['temperature']}, top-p {s.get('top_p', 1)}"
    box.info(f"**Replaying a recorded run**: “{trace.prompt[:90]}” · {mode} · seed {s.get('seed', 0)} · "
             f"{trace.new_tokens} new tokens · {trace.model}", icon=":material/history:")
