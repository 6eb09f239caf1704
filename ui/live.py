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

import json
import sys
import threading
from typing import NamedTuple

import streamlit as st

from paradec.lanes import QueueFull
from paradec.traces.trace import Trace

from . import offered, remote
from .i18n import _
from .settings import Settings

MAX_RESULTS = 32  # live traces kept per process
WAITING = 16  # live runs that may wait per model behind the running one
WARM_UP_TOKENS = 2  # before a live run's timed decodes: the prompt's pass and a step, about what the browser takes
# to answer a click (8 tokens cost 0.3 s on a Zen 2 and added that to click-to-trace for no fairer a speed-up)


@st.cache_resource(show_spinner=False)
def _runner(device: str, dtype: str):
    """The process's runner: the models it loads (once, shared read-only by every session), the drafts
    and fine-tuned copies made for them, and one waiting line per model."""
    from paradec.runner import Runner

    return Runner(device, dtype, queue=WAITING)


@st.cache_resource(show_spinner=False)
def _worker():
    """The one thread this process runs torch on."""
    from paradec.serving.worker import Worker

    return Worker()


def _on_worker(job, on_event=None):
    """job() on the torch thread; on_event(step) here, in the script's thread, for every step it reports."""
    return _worker().call(job, on_event)


def _loaded(runner, model: str):
    """The model, loaded on first use. The first load on a machine also builds paradec's CPU kernel
    (paradec.cpu.kernels): say so while it runs."""
    if model in runner.specs():
        return runner.target(model)
    with st.spinner(_("Loading the model (on a new machine, paradec also builds its CPU kernel once: about a "
                      "minute)…")):
        return _on_worker(lambda emit: runner.target(model))


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
    return _("**CPU kernel: not available here** ({why}). Live runs on the CPU use torch's slower matrix "
             "products.").format(why=state)


@st.cache_resource
def _results() -> tuple[dict, threading.Lock]:
    return {}, threading.Lock()


def _device() -> tuple[str, str]:
    from paradec import models

    device = models.pick_device(None)
    return device, models.pick_dtype(device, None)


class Key(NamedTuple):
    """Every input that changes a live result."""

    model: str
    device: str
    dtype: str
    draft: str | None
    method: str
    params: str  # JSON, sorted keys
    prompt: str
    max_new_tokens: int
    temperature: float
    top_p: float
    seed: int
    backend: str = ""  # URL of a paradec service that runs it ("": this process)


def key(s: Settings, method: str, params: dict, draft: str | None) -> Key:
    """The run's key; Refused when it names a model, draft or weights the operator does not offer
    (a backend applies its own operator's rules)."""
    if not s.backend:
        _check_offered(s.model, method, params, draft)
    device, dtype = ("backend", "") if s.backend else _device()  # the backend picks its own
    return Key(s.model, device, dtype, draft, method, json.dumps(params, sort_keys=True), s.prompt,
               s.max_new_tokens, s.temperature, s.top_p, s.seed, s.backend)


def _check_offered(model: str, method: str, params: dict, draft: str | None) -> None:
    from paradec import methods

    got = offered.fetched()
    offered.check_model(model, got.get("model", []))
    if draft:
        offered.check_draft(draft, got.get("draft", []))
    heads = [folder for role, folders in got.items() if role not in ("model", "draft") for folder in folders]
    offered.check_weights(methods.weights_named(method, params), heads)


def cached(k) -> Trace | None:
    store, lock = _results()
    with lock:
        return store.get(k)


def _keep(k, value) -> None:
    store, lock = _results()
    with lock:
        if len(store) >= MAX_RESULTS:
            store.pop(next(iter(store)))
        store[k] = value


def run(k: Key, progress=None, beside: Key | None = None) -> Trace:
    """Run (or fetch) the trace for key k; progress(fraction, text) is called while it waits for
    its turn and after every step. beside: a second run (AR's baseline) decoded right after k in the
    same turn, before the page draws anything, so that nothing else (the browser drawing k's player on the
    same machine) runs during one timing and not the other; fetch it with cached(beside). Raises one of
    errors() with a one-line message."""
    got = {key: cached(key) for key in (k, beside) if key is not None}
    keys = [key for key, trace in got.items() if trace is None]
    parts = [_part(progress, j, len(keys)) for j in range(len(keys))]
    if keys and k.backend:
        got.update({key: remote.run(key.backend, _request(key), part) for key, part in zip(keys, parts)})
    elif keys:
        with _turn(k, progress):  # the same run may have finished while this one waited
            got.update({key: cached(key) for key in keys})
            if any(got[key] is None for key in keys):
                _warm_up(k)
            got.update({key: got[key] or _decode(key, part) for key, part in zip(keys, parts)})
    for key in keys:
        _keep(key, got[key])
    return got[k]


def _warm_up(k: Key) -> None:
    """A short untimed AR decode on k's model and prompt before the timed ones. The browser answers the click
    that started the run for about a tenth of a second, on the cores the run decodes on: without this, that fell
    on the method's timing and not on its AR baseline's, and the page showed the method slower against AR than
    the same two decodes give in a script (scripts/live_timing.py, 5 runs: median 1.06x against 1.25x)."""
    _decode(k._replace(draft=None, method="ar", params="{}", max_new_tokens=WARM_UP_TOKENS))


def _turn(k: Key, progress=None):
    """This run's turn on its model (QueueFull when too many wait)."""
    text = _("waiting for the model: {ahead} run(s) ahead of yours")  # here: the callback may run on another thread

    def waiting(ahead: int) -> None:
        if progress:
            progress(0.0, text.format(ahead=ahead))

    runner = _runner(k.device, k.dtype)
    _loaded(runner, k.model)  # on the torch thread: the lane belongs to the model, and asking for it loads it
    return runner.turn(k.model, waiting)


def _request(k: Key) -> dict:
    """The backend's POST /run body. 'embedded', the sidebar's default, means the backend's own model."""
    body = {"method": k.method, "prompt": k.prompt, "max_new_tokens": k.max_new_tokens, "temperature": k.temperature,
            "top_p": k.top_p, "seed": k.seed, "params": json.loads(k.params), "draft": k.draft}
    return body if k.model == "embedded" else {**body, "model": k.model}


def run_set(keys: dict[str, Key], progress=None) -> dict[str, Trace]:
    """Several methods decoded back to back in this process, after a warm-up, so that their
    timings compare (paradec.traces.trace.speedup). Cached as one set."""
    set_key = ("set", *sorted(keys.items()))
    hit = cached(set_key)
    if hit is None:
        first, parts = next(iter(keys.values())), [_part(progress, j, len(keys)) for j in range(len(keys))]
        if first.backend:  # the backend queues each run on its own: timings compare less well
            hit = {name: remote.run(k.backend, _request(k), part) for (name, k), part in zip(keys.items(), parts)}
        else:
            with _turn(first, progress):  # one turn for the set: nothing else runs between its timings
                _warm_up(first)
                hit = {name: _decode(k, part) for (name, k), part in zip(keys.items(), parts)}
        _keep(set_key, hit)
    return hit


def _part(progress, j: int, n: int):
    """progress for the j-th of n runs: its fraction scaled into the set's."""
    return progress and (lambda f, text=None: progress((j + f) / n, text))


def _decode(k: Key, progress=None) -> Trace:
    from paradec.runner import Request

    runner = _runner(k.device, k.dtype)  # its model loaded by _turn
    request = Request(k.method, k.prompt, json.loads(k.params), k.max_new_tokens, k.temperature, k.top_p, 0, k.seed,
                      k.draft, model=k.model)
    done = [0]

    def on_step(step):
        done[0] += len(step.tokens)
        if progress:
            progress(min(1.0, done[0] / k.max_new_tokens))

    return _on_worker(lambda emit: runner.decode(request, emit), on_step)


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

    return _on_worker(lambda emit: probe.this_machine(cache_dir(), threads=1))


BENCH_METHODS = ("pld", "jacobi", "lookahead")  # need no draft model or trained heads: any target


def bench(s: Settings, prompts: dict[str, str]) -> dict:
    """A small `paradec bench` on the sidebar's model: AR and BENCH_METHODS on each prompt (its
    name as the category), one after the other in this process. Cached like a live trace."""
    from paradec.bench import Options, variants
    from paradec.bench import bench as run_bench

    if s.backend:
        raise remote.BackendError(_("the small benchmark runs in this process, and this app sends live runs to a "
                                    "backend"))
    offered.check_model(s.model, offered.fetched().get("model", []))
    device, dtype = _device()
    k = ("bench", s.model, device, dtype, tuple(prompts.items()), s.max_new_tokens, s.temperature, s.top_p, s.seed)
    hit = cached(k)
    if hit is None:
        rows = [{"id": n, "category": name, "prompt": p} for n, (name, p) in enumerate(prompts.items(), 1)]
        options = Options(s.max_new_tokens, s.temperature, s.top_p, seed=s.seed,
                          prompts="the app's preset prompts")  # not taught: the results file's record
        runner = _runner(device, dtype)
        _loaded(runner, s.model)
        with runner.turn(s.model):
            hit = _on_worker(lambda emit: run_bench(runner, variants(",".join(BENCH_METHODS)), rows, options,
                                                    model=s.model))
        _keep(k, hit)
    return hit


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
