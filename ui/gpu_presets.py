"""The sidebar's GPU presets, drawn in live mode only: reading the device needs torch, which only
ui.live touches. A preset is offered only where it fits (device, memory); fetching it downloads
its models with a progress bar, checks its drafts' vocabularies and makes its target the model."""
from __future__ import annotations

import threading

import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

from paradec import catalog
from paradec.tuning import presets

from . import offered
from .i18n import N_, _, labelled

NONE = N_("none")  # the option's value (stays English); shown translated
MODEL_KEY = "sb.model"  # the sidebar's target model input
PENDING = "sb.gpu_model"  # a fetched preset's target, for the model input on the next run


def use_fetched_model() -> None:
    """Put a just-fetched preset's target into the model input; called before that input is
    drawn (streamlit refuses to change a widget's value once it is drawn in a run)."""
    if PENDING in st.session_state:
        st.session_state[MODEL_KEY] = st.session_state.pop(PENDING)


def render() -> None:
    """The presets that fit this process's device (call it only for live runs in this process)."""
    from . import live  # here, not at the top: ui.live imports ui.sidebar, which draws this

    info = live.device_info()
    fit = {p.name: p for p in presets.available(info)}
    if not fit:
        st.caption(_("{requirement}. This machine: {device}.").format(requirement=presets.requirement(),
                                                                      device=info.name))
        return
    name = st.selectbox(_("GPU preset ({device})").format(device=info.name), [NONE, *fit], key="sb.gpu_preset",
                        format_func=labelled({NONE: NONE}),
                        help=_("Real models from the Hugging Face hub that fit this GPU's memory"))
    if name == NONE:
        return
    preset, profile = fit[name], presets.device_profile(info)
    st.caption(_("needs ~{need:.0f} of {have:.0f} GiB in {dtype}; for {methods}").format(
        need=preset.memory_bytes / 2**30, have=info.memory_bytes / 2**30, dtype=profile.dtype,
        methods=", ".join(preset.methods)) + (f". {preset.note}" if preset.note else ""))
    ready = st.session_state.get(offered.READY)
    if ready and ready[0] == name:
        st.caption(_usage(ready[1], profile))
    elif st.button(_("Download and use"), key="sb.gpu_fetch"):
        _fetch(live, preset)


def _fetch(live, preset: presets.Preset) -> None:
    from paradec.models.hub import HubError  # the hub's client: loaded on the click, not with the page

    bar = st.progress(0.0, text=_("Contacting the Hugging Face hub…"))
    try:
        folders = live.fetch(preset, _shown_on(bar))
    except HubError as e:
        bar.empty()
        st.error(str(e))
        return
    st.session_state[offered.READY] = (preset.name, folders)
    st.session_state[PENDING] = preset.target.repo
    st.rerun()


def _shown_on(bar):
    """A progress callback for the download threads: they draw on this script run's bar."""
    ctx, lock, last = get_script_run_ctx(), threading.Lock(), [-1.0]

    def show(text: str, fraction: float) -> None:
        add_script_run_ctx(threading.current_thread(), ctx)
        with lock:
            if abs(fraction - last[0]) >= 0.01 or fraction == 1.0:  # at most ~100 redraws a bar
                last[0] = fraction
                bar.progress(fraction, text=text)

    return show


def _usage(folders: dict[str, list[str]], profile: presets.Profile) -> str:
    """Where each fetched model goes, and the sizes chosen for this device."""
    lines = [_("The target is the model below.")]
    lines += [_("sps draft (type it on its page): {folder}").format(folder=folder)
              for folder in folders.get("draft", [])]
    heads = {(m.uses, p.name) for m in catalog.METHODS.values() if m.needs == "heads" and m.uses
             for p in m.params if p.weights}  # the preset model each method's weights parameter names
    for role, param in sorted(heads):
        lines += [f"{role}: --set {param}={folder}" for folder in folders.get(role, [])]
    sized = (f"{m} " + ", ".join(f"{k}={v}" for k, v in profile.params(m).items())
             for m in catalog.METHODS if profile.params(m))
    return "  \n".join([*lines, _("Sized for this device: {sizes}").format(sizes="; ".join(sized))])
