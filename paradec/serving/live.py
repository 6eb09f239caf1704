"""Live runs for a front end that shows them as they come (the app): a bounded cache of finished results, the
warm-up before timed decodes, and the choice between this process and a remote paradec service.

Models are loaded once per process by one Runner per device and shared read-only (each run keeps its own KV
cache); runs on one model take turns in its lane (paradec.lanes), so a class pressing Run at once queues instead of
filling the memory. Every torch call runs on one thread (paradec.serving.worker): a server runs each request on a
thread of its own, and torch on many threads was slower than the same decode in a script. Every value that
changes a result is part of its key. A key with a backend URL goes to that service through the transport the
front end gives (the app's client, ui/remote.py), and this process never imports torch for it."""
from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple

MAX_RESULTS = 32  # finished results kept per process
WAITING = 16  # runs that may wait per model behind the running one
WARM_UP_TOKENS = 2  # before a live run's timed decodes: the prompt's pass and a step, about what the browser takes
# to answer a click (8 tokens cost 0.3 s on a Zen 2 and added that to click-to-trace for no fairer a speed-up)
BENCH_METHODS = ("pld", "jacobi", "lookahead")  # need no draft model or trained heads: any target

Progress = Callable[..., None]  # progress(fraction, text=None)


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
    weights: str = ""  # q4 or f32 ("": the default, paradec.models.gguf.pick_weights's: the file's own on a CPU)


def request_body(k: Key) -> dict:
    """A backend's POST /run body for k. 'embedded', the default, means the backend's own model."""
    body = {"method": k.method, "prompt": k.prompt, "max_new_tokens": k.max_new_tokens, "temperature": k.temperature,
            "top_p": k.top_p, "seed": k.seed, "params": json.loads(k.params), "draft": k.draft}
    if k.weights:  # the backend loaded its own: a run that expects other weights is refused, never loaded
        body["weights"] = k.weights
    return body if k.model == "embedded" else {**body, "model": k.model}


class Live:
    """One process's live runs. remote(url, body, progress) -> Trace runs a key that names a backend."""

    def __init__(self, remote: Callable, max_results: int = MAX_RESULTS):
        self.remote, self.max_results = remote, max_results
        self._results: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._runners: dict[tuple[str, str, str], object] = {}
        self._worker = None

    # ---------------------------------------------------------------- the torch thread and the runners
    def on_worker(self, job, on_event=None):
        """job(emit) on the one torch thread; on_event(event) in the caller's thread for every event."""
        with self._lock:
            if self._worker is None:
                from .worker import Worker

                self._worker = Worker()
        return self._worker.call(job, on_event)

    def runner(self, k: Key):
        """The runner for k's device, dtype and weights: the models it loads (once), the drafts made for them, one
        lane per model. A model at both precisions is two targets, each with its own lane."""
        where = (k.device, k.dtype, k.weights)
        with self._lock:
            if where not in self._runners:
                from ..runner import Runner

                self._runners[where] = Runner(k.device, k.dtype, queue=WAITING, weights=k.weights or None)
            return self._runners[where]

    def loaded(self, k: Key) -> bool:
        return k.model in self.runner(k).specs()

    def load(self, k: Key) -> None:
        """k's model, loaded on the torch thread (the first load on a machine also builds the CPU kernel)."""
        runner = self.runner(k)
        self.on_worker(lambda emit: runner.target(k.model))

    # ---------------------------------------------------------------- the results
    def cached(self, k):
        with self._lock:
            return self._results.get(k)

    def keep(self, k, value) -> None:
        with self._lock:
            self._results[k] = value
            while len(self._results) > self.max_results:
                self._results.popitem(last=False)

    # ---------------------------------------------------------------- runs
    def run(self, k: Key, progress: Progress | None = None, beside: Key | None = None, waiting=None):
        """The trace for key k, run or from the cache; progress(fraction, text) while it waits and after every
        step; waiting(ahead) while it waits for its turn. beside: a second run (AR's baseline) decoded right
        after k in the same turn, so that nothing else (the browser drawing k's player) runs during one timing
        and not the other; fetch it with cached(beside)."""
        got = {key: self.cached(key) for key in (k, beside) if key is not None}
        keys = [key for key, trace in got.items() if trace is None]
        parts = [_part(progress, j, len(keys)) for j in range(len(keys))]
        if keys and k.backend:
            got.update({key: self.remote(key.backend, request_body(key), part) for key, part in zip(keys, parts)})
        elif keys:
            with self.turn(k, waiting):  # the same run may have finished while this one waited
                got.update({key: self.cached(key) for key in keys})
                if any(got[key] is None for key in keys):
                    self.warm_up(k)
                got.update({key: got[key] or self.decode(key, part) for key, part in zip(keys, parts)})
        for key in keys:
            self.keep(key, got[key])
        return got[k]

    def run_set(self, keys: dict[str, Key], progress: Progress | None = None, waiting=None) -> dict:
        """Several methods decoded back to back in one turn after a warm-up, so that their timings compare
        (paradec.traces.trace.speedup). Cached as one set."""
        set_key = ("set", *sorted(keys.items()))
        hit = self.cached(set_key)
        if hit is None:
            first, parts = next(iter(keys.values())), [_part(progress, j, len(keys)) for j in range(len(keys))]
            if first.backend:  # the backend queues each run on its own: timings compare less well
                hit = {name: self.remote(k.backend, request_body(k), part)
                       for (name, k), part in zip(keys.items(), parts)}
            else:
                with self.turn(first, waiting):  # one turn for the set: nothing else runs between its timings
                    self.warm_up(first)
                    hit = {name: self.decode(k, part) for (name, k), part in zip(keys.items(), parts)}
            self.keep(set_key, hit)
        return hit

    def turn(self, k: Key, waiting=None):
        """k's turn on its model (QueueFull when too many wait); the model is loaded first."""
        self.load(k)  # on the torch thread: the lane belongs to the model, and asking for it loads it
        return self.runner(k).turn(k.model, waiting)

    def warm_up(self, k: Key) -> None:
        """A short untimed AR decode on k's model and prompt before the timed ones. The browser answers the click
        that started a run for about a tenth of a second, on the cores the run decodes on: without this, that fell
        on the method's timing and not on its AR baseline's, and the page showed the method slower against AR than
        the same two decodes give in a script (scripts/live_timing.py, 5 runs: median 1.06x against 1.25x)."""
        self.decode(k._replace(draft=None, method="ar", params="{}", max_new_tokens=WARM_UP_TOKENS))

    def decode(self, k: Key, progress: Progress | None = None):
        from ..runner import Request

        runner = self.runner(k)
        request = Request(k.method, k.prompt, json.loads(k.params), k.max_new_tokens, k.temperature, k.top_p, 0,
                          k.seed, k.draft, model=k.model)
        done = [0]

        def on_step(step):
            done[0] += len(step.tokens)
            if progress:
                progress(min(1.0, done[0] / k.max_new_tokens))

        return self.on_worker(lambda emit: runner.decode(request, emit), on_step)

    def bench(self, k: Key, prompts: dict[str, str], label: str) -> dict:
        """A small benchmark on k's model and settings: AR and BENCH_METHODS on each prompt (its name as the
        category), one after the other in this process, in one turn. Cached like a live trace."""
        from ..bench import Options, variants
        from ..bench import bench as run_bench

        key = ("bench", k._replace(method="", params="", prompt="", draft=None), tuple(prompts.items()))
        hit = self.cached(key)
        if hit is None:
            rows = [{"id": n, "category": name, "prompt": p} for n, (name, p) in enumerate(prompts.items(), 1)]
            options = Options(k.max_new_tokens, k.temperature, k.top_p, seed=k.seed, prompts=label)
            runner = self.runner(k)
            with self.turn(k):
                hit = self.on_worker(lambda emit: run_bench(runner, variants(",".join(BENCH_METHODS)), rows,
                                                            options, model=k.model))
            self.keep(key, hit)
        return hit


def _part(progress: Progress | None, j: int, n: int):
    """progress for the j-th of n runs: its fraction scaled into the set's."""
    return progress and (lambda f, text=None: progress((j + f) / n, text))
