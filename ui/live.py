"""Live runs. The only UI module that reaches torch, and only inside its functions, so a page
that replays recorded traces never imports it.

Models are cached once per process and shared read-only between sessions (each run keeps its
own KV cache); runs on one model take turns in its lane (paradec.lanes), so a class pressing
Run at once queues instead of filling the memory. Every torch call (loading, decoding, probing) runs on
one thread (paradec.serving.worker): Streamlit runs each script run on a new thread, and torch on many threads
was slower than the same decode in a script. Every value that changes a result is part of
the cache key. With the operator's backend (PARADEC_BACKEND), runs go to `python -m paradec serve`
instead (ui.remote) and this process never imports torch. Models, drafts and weights are the ones the
operator offers (ui.offered)."""
from __future__ import annotations

import dataclasses
import json
import sys

import streamlit as st

from paradec.lanes import QueueFull
from paradec.serving.live import BENCH_METHODS, Key  # noqa: F401 (the pages name them as live.*)
from paradec.traces.trace import Trace

from . import offered, remote
from .i18n import _
from .settings import Settings


@st.cache_resource(show_spinner=False)
def _live():
    """The process's live runs (paradec.serving.live): its runners, its torch thread and its results, shared by
    every session; a key that names a backend goes through the app's client (ui.remote)."""
    from paradec.serving.live import Live

    return Live(remote.run)


def kernel_note() -> str:
    """Whether this server's live runs on the CPU decode with paradec's C++ kernel (paradec.cpu.kernels), never
    building it: a page that replays recorded traces imports no torch. The Space's image requires it at start."""
    from paradec.cpu import kernels

    try:
        state = kernels.state()
    except kernels.KernelError as e:
        return str(e)
    if state == "loaded":
        return _("**CPU kernel: loaded.** Live runs on this server's CPU decode with paradec's C++ kernel.")
    if state == "not tried":
        return _("**CPU kernel: not loaded yet.** The first live run on this server's CPU loads it (on a new "
                 "machine it is built first: about a minute).")
    if state == "off":
        return _("**CPU kernel: off** (PARADEC_KERNEL=off). Live runs on the CPU use torch's matrix products.")
    from paradec import kernel_note

    ratio = kernel_note.measured()
    cost = "" if ratio is None else " " + _("The benchmark measured AR that way at {ratio:.2f}× the kernel's "
                                            "speed.").format(ratio=ratio)
    return _("**CPU kernel: not available here** ({why}). Live runs on the CPU use torch's slower matrix "
             "products.").format(why=state) + cost


def _device() -> tuple[str, str]:
    from paradec import models

    device = models.pick_device(None)
    return device, models.pick_dtype(device, None)


def key(s: Settings, method: str, params: dict, draft: str | None) -> Key:
    """The run's key; Refused when it names a model, draft or weights the operator does not offer
    (a backend applies its own operator's rules)."""
    if not s.backend:
        _check_offered(s.model, method, params, draft)
    device, dtype = ("backend", "") if s.backend else _device()  # the backend picks its own
    return Key(s.model, device, dtype, draft, method, json.dumps(params, sort_keys=True), s.prompt,
               s.max_new_tokens, s.temperature, s.top_p, s.seed, s.backend, s.weights)


def _check_offered(model: str, method: str, params: dict, draft: str | None) -> None:
    from paradec import methods

    got = offered.fetched()
    offered.check_model(model, got.get("model", []))
    if draft:
        offered.check_draft(draft, got.get("draft", []))
    heads = [folder for role, folders in got.items() if role not in ("model", "draft") for folder in folders]
    offered.check_weights(methods.weights_named(method, params), heads)


def cached(k) -> Trace | None:
    return _live().cached(k)


def _loading(k: Key) -> None:
    """k's model loaded before its run, with a word while it loads (the first load on a machine also builds
    paradec's CPU kernel)."""
    if k.backend or _live().loaded(k):
        return
    with st.spinner(_("Loading the model (on a new machine, paradec also builds its CPU kernel once: about a "
                      "minute)…")):
        _live().load(k)


def _waiting(progress):
    """waiting(ahead) for a run's turn, as progress text (translated here: the callback may run on another
    thread)."""
    text = _("waiting for the model: {ahead} run(s) ahead of yours")
    return lambda ahead: progress and progress(0.0, text.format(ahead=ahead))


def run(k: Key, progress=None, beside: Key | None = None) -> Trace:
    """Run (or fetch) the trace for key k (paradec.serving.live.Live.run); progress(fraction, text) while it waits
    and after every step; beside: AR's baseline, decoded right after k in the same turn. Raises one of errors()
    with a one-line message."""
    _loading(k)
    return _live().run(k, progress, beside, _waiting(progress))


def run_set(keys: dict[str, Key], progress=None) -> dict[str, Trace]:
    """Several methods decoded back to back, after a warm-up, so that their timings compare. Cached as one set."""
    _loading(next(iter(keys.values())))
    return _live().run_set(keys, progress, _waiting(progress))


def errors() -> tuple[type, ...]:
    """The exceptions whose message is for the user. paradec's own are looked up only where a run
    in this process imported them: a run on a backend never imports torch, not even to fail."""
    found = (getattr(sys.modules.get("paradec.methods"), "InputError", None),
             getattr(sys.modules.get("paradec.models"), "ModelError", None))
    return (remote.BackendError, QueueFull, offered.Refused, *(e for e in found if e))


def machine():
    """This machine's roofline, probed on one thread as the recorded traces were (cached on disk)."""
    with st.spinner(_("Measuring this machine (a second or two)…")):  # shown after half a second: not on a hit
        return _machine()


@st.cache_resource(show_spinner=False)
def _machine():
    from paradec.cache import cache_dir
    from paradec.costs import machine as probe

    return _live().on_worker(lambda emit: probe.this_machine(cache_dir(), threads=1))


def bench(s: Settings, prompts: dict[str, str]) -> dict:
    """A small `paradec bench` on the sidebar's model: AR and BENCH_METHODS on each prompt (its name as the
    category), one after the other in this process. Cached like a live trace."""
    if s.backend:
        raise remote.BackendError(_("the small benchmark runs in this process, and this app sends live runs to a "
                                    "backend"))
    offered.check_model(s.model, offered.fetched().get("model", []))
    k = key(dataclasses.replace(s, prompt=""), "ar", {}, None)
    _loading(k)
    return _live().bench(k, prompts, "the app's preset prompts")  # not taught: the results file's record


@st.cache_resource(show_spinner=False)
def device_info():
    """This process's device as paradec.tuning.presets sees it (name, memory, compute capability)."""
    from paradec import models
    from paradec.tuning import presets

    return presets.device_info(models.pick_device(None))


def sized(method: str) -> dict:
    """The tree and draft sizes this process's device calls for (paradec.tuning.presets.Profile.params)."""
    from paradec.tuning import presets

    return presets.device_profile(device_info()).params(method)


def fetch(preset, progress=None) -> dict[str, list[str]]:
    """Download a GPU preset's models into the hub cache (progress(text, fraction) as it goes) and
    check that every draft speaks the target's vocabulary. Returns role -> local folders; raises
    paradec.models.hub.HubError with a one-line message."""
    from paradec.models import hub

    n = len(preset.models)
    paths = [hub.download(m, _reporter(f"{m.repo} ({i}/{n})", progress)) for i, m in enumerate(preset.models, 1)]
    folders: dict[str, list[str]] = {}
    for m, path in zip(preset.models, paths):
        why = hub.vocab_mismatch(paths[0], path) if m.role == "draft" else ""
        if why:
            raise hub.HubError(_("{draft} cannot draft for {target}: {why}").format(
                draft=m.repo, target=preset.target.repo, why=why))
        folders.setdefault(m.role, []).append(str(path))
    return folders


def _reporter(label: str, progress):
    """hub.download's (what, done, total) as progress(text, fraction)."""
    def report(what: str, done: float, total: float) -> None:
        if progress and total:
            progress(f"{label}: {what}", min(1.0, done / total))

    return report
