"""The shared sidebar: model, prompt, sampling settings and the trace source.
app.py draws it on every run; pages read the result with current()."""
from __future__ import annotations

import os
from dataclasses import dataclass

import streamlit as st

from . import gpu_presets
from . import classroom
from .presets import CUSTOM, PRESETS

KEY = "_settings"
LIMITS = {"temperature": (0.0, 1.5), "top_p": (0.05, 1.0), "max_new": (8, 256), "seed": (0, 2**31 - 1)}
BACKEND_ENV = "PARADEC_BACKEND"  # the Backend URL's default: a front end deployed to drive a GPU box


@dataclass(frozen=True)
class Settings:
    model: str  # 'embedded', a hub id or a local folder
    prompt: str
    temperature: float
    top_p: float
    max_new_tokens: int
    seed: int
    live: bool  # False: replay recorded traces; True: run the model on these settings
    backend: str = ""  # URL of `python -m paradec serve` that runs live traces ("": this process)


def render() -> Settings:
    classroom.apply_sidebar(PRESETS, CUSTOM, LIMITS)  # a classroom link, before the widgets it fills
    with st.sidebar:
        gpu_presets.use_fetched_model()
        live = st.radio("Trace source", ["recorded", "live"], horizontal=True, key="sb.source",
                        help="recorded: replay a real run saved in assets/traces (instant). "
                             "live: run the model on the settings below.") == "live"
        preset = st.selectbox("Prompt", [*PRESETS, CUSTOM], key="sb.preset")
        if preset == CUSTOM:
            prompt = st.text_area("Your prompt", "Tell me a short story about a robot.", key="sb.prompt", height=90)
        else:
            prompt = PRESETS[preset]
            st.caption(prompt if len(prompt) < 160 else prompt[:157] + "…")
        temperature = st.slider("Temperature (0 = greedy)", *LIMITS["temperature"], 0.0, 0.05, key="sb.temperature")
        top_p = st.slider("Top-p", *LIMITS["top_p"], 1.0, 0.05, key="sb.top_p")
        max_new = st.slider("Max new tokens", *LIMITS["max_new"], 48, 8, key="sb.max_new")
        seed = st.number_input("Seed", *LIMITS["seed"], 0, key="sb.seed")
        model = st.text_input("Target model", "embedded", key="sb.model",
                              help="'embedded' = the bundled SmolLM2-135M-Instruct; or a Hugging Face id / local folder")
        backend = st.text_input("Backend URL", os.environ.get(BACKEND_ENV, ""), key="sb.backend",
                                placeholder="http://gpu-box:8765",
                                help="Live runs go to this `python -m paradec serve` (e.g. a GPU box) instead of "
                                     "running here; empty: this machine. 'embedded' above = the backend's own model.")
        if live and not backend.strip():  # presets for this process's GPU; a backend has its own
            gpu_presets.render()
    settings = Settings(model.strip() or "embedded", prompt, float(temperature), float(top_p), int(max_new), int(seed),
                        live, backend.strip())
    st.session_state[KEY] = settings
    return settings


def current() -> Settings:
    return st.session_state[KEY]
