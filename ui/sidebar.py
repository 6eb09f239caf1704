"""The shared sidebar: model, prompt, sampling settings and the trace source.
app.py draws it on every run; pages read the result with current()."""
from __future__ import annotations

import streamlit as st

from . import classroom, gpu_presets, i18n, offered, predict, presenter
from .i18n import N_, _
from .presets import CUSTOM, PRESETS
from .settings import Settings

KEY = "_settings"
BOX = "_sb.recorded"  # the sidebar's box for the recorded run's own settings
LIMITS = {"temperature": (0.0, 1.5), "top_p": (0.05, 1.0), "max_new": (8, 256), "seed": (0, 2**31 - 1)}
SOURCES = {"recorded": N_("recorded"), "live": N_("live")}  # the trace source's values, and what they show
WEIGHTS = {"": N_("default"), "q4": N_("4-bit"), "f32": N_("float32")}  # a live run's target weights
MY_PROMPT = "Tell me a short story about a robot."  # not taught: the model's input, as the presets


def render() -> Settings:
    models = offered.models(offered.fetched().get("model", []))
    classroom.apply_sidebar(PRESETS, CUSTOM, LIMITS, models)  # a classroom link, before the widgets it fills
    with st.sidebar:
        i18n.switch()
        presenter.toggle()
        predict.toggle()
        gpu_presets.use_fetched_model()
        if st.session_state.get("sb.model") not in models:  # e.g. a model the operator no longer offers
            st.session_state.pop("sb.model", None)
        live = st.radio(_("Trace source"), list(SOURCES), format_func=i18n.labelled(SOURCES), horizontal=True,
                        key="sb.source", help=_("recorded: replay a real run saved in assets/traces (instant). "
                                                "live: run the model on the settings below.")) == "live"
        st.session_state[BOX] = st.container()  # a page names the recorded run it replays here
        if not live:
            st.caption(_("Greyed out below: settings for **live** runs only. A recorded run replays its own "
                         "settings; switch the trace source to live to decode with these."))
        off = not live
        names = [*PRESETS, CUSTOM]  # the presets' names are their keys
        preset = st.selectbox(_("Prompt"), names, format_func=i18n.labelled({n: n for n in names}), key="sb.preset",
                              disabled=off)
        if preset == CUSTOM:
            prompt = st.text_area(_("Your prompt"), MY_PROMPT, key="sb.prompt", height=90, disabled=off)
        else:
            prompt = PRESETS[preset]
            st.caption(prompt if len(prompt) < 160 else prompt[:157] + "…")
        temperature = st.slider(_("Temperature (0 = greedy)"), *LIMITS["temperature"], 0.0, 0.05,
                                key="sb.temperature", disabled=off)
        top_p = st.slider("Top-p", *LIMITS["top_p"], 1.0, 0.05, key="sb.top_p", disabled=off)
        max_new = st.slider(_("Max new tokens"), *LIMITS["max_new"], 48, 8, key="sb.max_new", disabled=off)
        seed = st.number_input(_("Seed"), *LIMITS["seed"], 0, key="sb.seed", disabled=off)
        model = st.selectbox(_("Target model"), models, key="sb.model", disabled=off,
                             help=_("'embedded' = the bundled SmolLM2-135M-Instruct; the operator of this app offers "
                                    "others (environment variable {variable}) and the GPU presets below").format(
                                 variable=offered.MODELS))
        weights = st.radio(_("Weights"), list(WEIGHTS), format_func=i18n.labelled(WEIGHTS), horizontal=True,
                           key="sb.weights", disabled=off,
                           help=_("default: the GGUF file's own 4-bit blocks on a CPU (float32 elsewhere). 4-bit "
                                  "reads about a fifth of float32's bytes per token; float32 is the file dequantized "
                                  "once. At either, every lossless method gives exactly its AR's tokens."))
        backend = _backend()
        if live:
            _preset_notice()
        if live and not backend:  # presets for this process's GPU; a backend has its own
            gpu_presets.render()
    settings = Settings(model, prompt, float(temperature), float(top_p), int(max_new), int(seed), live, backend,
                        weights)
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
        st.caption(_("Live runs go to the operator's backend (`python -m paradec serve`); 'embedded' is its own "
                     "model."))
    return url


def _preset_notice() -> None:
    """The operator's preset file, when it does not load: live runs start from each method's own settings."""
    try:
        offered.preset()
    except offered.Refused as e:
        st.warning(_("{error}. Live runs start from each method's own settings.").format(error=e),
                   icon=":material/warning:")


def current() -> Settings:
    return st.session_state[KEY]


def recorded(trace) -> None:
    """Say in the sidebar which settings the replayed recorded run used (the widgets are for live runs)."""
    box = st.session_state.get(BOX)
    if box is None:
        return
    s = trace.sampling
    mode = (_("greedy") if s.get("temperature", 0) <= 0
            else _("temperature {temperature}, top-p {top_p}").format(temperature=s["temperature"],
                                                                      top_p=s.get("top_p", 1)))
    box.info(_("**Replaying a recorded run**: “{prompt}” · {mode} · seed {seed} · {tokens} new tokens · "
               "{model}").format(prompt=trace.prompt[:90], mode=mode, seed=s.get("seed", 0),
                                 tokens=trace.new_tokens, model=trace.model), icon=":material/history:")
