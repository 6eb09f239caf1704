"""One thread for a runner's torch work: loading models and decoding.

torch runs its parallel regions on an OpenMP team that belongs to the thread that calls it. A
server calls from a new thread for every request (Streamlit: a thread per script run; uvicorn: its
thread pool), so each thread grew its own team, and on a 2-core machine the idle teams' threads
took turns with the busy one: a live decode ran 1.2-1.5x slower than the same decode in a script.
Every call here runs on one long-lived thread instead; the caller's thread waits, and receives the
run's events (its steps) in order, so a callback that draws a progress bar or checks for a closed
connection still runs where it always did, and may raise to stop the run."""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

_DONE = object()


class Stopped(Exception):
    """Raised inside the worker's job when its caller gave up (its callback raised)."""


class Worker:
    def __init__(self, name: str = "paradec-torch"):
        self._name = name
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def call(self, job: Callable[[Callable[[Any], None]], Any], on_event: Callable[[Any], None] | None = None):
        """Run job(emit) on the worker thread and return what it returns (or raise what it raised).
        Each emit(event) reaches on_event(event) in the caller's thread; if on_event raises, the job is
        stopped at its next emit and the caller gets on_event's exception. Called from the worker
        itself (a job that loads a model), the job runs at once."""
        if threading.current_thread() is self._thread:
            return job(on_event or (lambda event: None))
        events: queue.SimpleQueue = queue.SimpleQueue()
        gave_up = threading.Event()

        def emit(event) -> None:
            if gave_up.is_set():
                raise Stopped("the caller stopped waiting for this run")
            events.put((False, event))

        self._start()
        self._jobs.put((job, emit, events))
        return self._wait(events, gave_up, on_event)

    @staticmethod
    def _wait(events: queue.SimpleQueue, gave_up: threading.Event, on_event):
        failure: BaseException | None = None
        try:
            while True:
                done, item = events.get()
                if done:
                    break
                if on_event is not None and failure is None:
                    try:
                        on_event(item)
                    except Exception as e:  # e.g. a closed connection: stop the job, let it finish, re-raise
                        failure = e
                        gave_up.set()
        except BaseException:  # Ctrl-C while waiting: the job stops at its next step, on its own
            gave_up.set()
            raise
        ok, value = item
        if failure is not None:
            raise failure
        if ok:
            return value
        raise value

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()

    def _loop(self) -> None:
        while True:
            job, emit, events = self._jobs.get()
            try:
                result = (True, job(emit))
            except BaseException as e:  # noqa: B036 -- handed to the caller, whatever it is
                result = (False, e)
            events.put((True, result))
