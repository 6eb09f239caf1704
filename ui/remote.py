"""The app's client of `python -m paradec serve`: a run sent to a backend (a GPU box), its trace
back. Standard library only, so a front end that drives a backend never imports torch."""
from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from urllib.parse import urlsplit

from paradec.traces.trace import MAX_TRACE_BYTES, Trace, TraceError

TIMEOUT_S = 600  # a long run on a busy backend: the service answers only when it is done


class BackendError(RuntimeError):
    """The backend is unreachable or refused the run; the message is one line for the user."""


def run(url: str, body: dict, progress: Callable[[float, str], None] | None = None) -> Trace:
    """POST the run; while it waits and decodes, progress(0, text) shows the backend's queue. When the
    visitor leaves (Streamlit raises StopException in progress), the connection is dropped at once, so
    the backend cancels the run and frees its place; the page does not wait for the answer."""
    url = url.rstrip("/")
    call = _Call(f"{url}/run", body, TIMEOUT_S)
    pool = ThreadPoolExecutor(1)
    try:
        answer = pool.submit(call.answer)
        while not answer.done():  # the script thread owns the page: it polls, the worker waits
            if progress:
                progress(0.0, _queue_text(url, body.get("model")))
            wait([answer], timeout=0.5)
    except BaseException:
        call.drop()
        raise
    finally:
        pool.shutdown(wait=False)
    raw, headers = answer.result()
    try:
        trace = Trace.from_json(raw)  # the loader's limits and checks: a backend is another machine
    except TraceError as e:
        raise BackendError(f"the backend at {url} sent something that is not a trace: {e}") from None
    if progress:
        progress(1.0, f"done: waited {float(headers.get('X-Paradec-Wait-S', 0)):.1f} s behind "
                      f"{headers.get('X-Paradec-Ahead', '?')} run(s) on the backend")
    return trace


def queue(url: str) -> dict:
    """The backend's queues: model -> {running, waiting, capacity}."""
    raw, _ = _Call(f"{url.rstrip('/')}/queue", None, 5).answer()
    try:
        return json.loads(raw)
    except ValueError as e:
        raise BackendError(f"the backend at {url} answered something unreadable: {e}") from None


def _queue_text(url: str, model: str | None) -> str:
    try:
        lanes = queue(url)
    except BackendError:
        return "waiting for the backend…"
    lane = lanes.get(model) if model else next(iter(lanes.values()), None)
    if not lane:
        return "waiting for the backend…"
    return f"on the backend: {'a run decoding' if lane['running'] else 'idle'}, {lane['waiting']} waiting"


class _Call:
    """One GET (body None) or POST whose connection another thread may drop (drop())."""

    def __init__(self, url: str, body: dict | None, timeout: float):
        self.url, self.body, self.timeout, self.dropped = url, body, timeout, False
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BackendError(f"the backend URL {url[:80]!r} is not an http(s) URL")
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.conn = kind(parts.hostname, parts.port, timeout=timeout)

    def answer(self) -> tuple[bytes, dict]:
        """(the answer's bytes, its headers); every failure as one BackendError line."""
        data = None if self.body is None else json.dumps(self.body).encode()
        try:
            self.conn.connect()
            if self.dropped:  # dropped while connecting
                raise BackendError("the run was stopped")
            self.conn.request("GET" if data is None else "POST", self.path, data, {"Content-Type": "application/json"})
            r = self.conn.getresponse()
            raw = r.read(MAX_TRACE_BYTES + 1)
            if r.status >= 400:
                raise BackendError(f"the backend refused the run ({r.status}): {_message(raw, r.reason)}")
            return raw, r.headers
        except (OSError, http.client.HTTPException) as e:
            raise BackendError(f"cannot reach the backend at {self.url}: {getattr(e, 'strerror', None) or e}") from None
        finally:
            self.conn.close()

    def drop(self) -> None:
        """Close the connection under a waiting answer(): the backend sees its client leave."""
        self.dropped = True
        sock = self.conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in recv
            except OSError:
                pass


def _message(raw: bytes, reason: str) -> str:
    try:
        return str(json.loads(raw).get("error") or reason)[:300]
    except (ValueError, AttributeError):
        return reason
