"""One model, one run at a time: a first-come-first-served lane with a bounded waiting line.

A loaded model is shared read-only and every run keeps its own KV cache, so concurrent runs
could not corrupt each other; the lane is there for memory (one run's caches and activations
at a time per model, not one per student) and for honest timings (a run that shares the
cores with another measures neither). The service and the app each keep their lanes in
their own objects; this module holds no state."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass


class QueueFull(RuntimeError):
    """The waiting line is full; the message is one line for the user."""


@dataclass(frozen=True)
class Turn:
    ahead: int  # runs in front of this one when it arrived (the running one included)
    waited_s: float  # seconds it waited for its turn


class Lane:
    def __init__(self, capacity: int):
        if capacity < 0:
            raise ValueError(f"the queue size must be 0 or more, got {capacity}")
        self.capacity = capacity  # runs allowed to wait behind the running one
        self._cond = threading.Condition()
        self._issued = 0  # tickets handed out
        self._done = 0  # tickets finished: the ticket equal to this one runs now
        self._gone: set[int] = set()  # tickets that gave up waiting (a closed browser tab)

    def status(self) -> dict:
        with self._cond:
            inside = self._issued - self._done - len(self._gone)
        return {"running": inside > 0, "waiting": max(0, inside - 1), "capacity": self.capacity}

    @contextmanager
    def turn(self, on_wait: Callable[[int], None] | None = None) -> Iterator[Turn]:
        """Wait for this run's turn, then hold the lane until the block ends. on_wait(ahead) is
        called about twice a second while waiting, so a caller can show its place in the line.
        Raises QueueFull at once when `capacity` runs are already waiting."""
        t0 = time.perf_counter()
        with self._cond:
            ahead = self._issued - self._done - len(self._gone)
            if ahead > self.capacity:
                raise QueueFull(f"the queue is full ({ahead - 1} runs waiting behind the running one); "
                                f"try again in a moment")
            ticket = self._issued
            self._issued += 1
        try:
            self._wait(ticket, on_wait)
        except BaseException:  # interrupted while waiting: its turn is skipped when it comes
            self._leave(ticket)
            raise
        try:
            yield Turn(ahead, time.perf_counter() - t0)
        finally:
            self._leave(ticket)

    def _wait(self, ticket: int, on_wait: Callable[[int], None] | None) -> None:
        with self._cond:
            while self._done != ticket:
                if on_wait:
                    on_wait(ticket - self._done - sum(t < ticket for t in self._gone))
                self._cond.wait(timeout=0.5)

    def _leave(self, ticket: int) -> None:
        with self._cond:
            if ticket != self._done:
                self._gone.add(ticket)
                return
            self._done += 1
            while self._done in self._gone:
                self._gone.remove(self._done)
                self._done += 1
            self._cond.notify_all()
