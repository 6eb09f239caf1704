"""The app's client of `python -m paradec serve`: a run sent to a backend (a GPU box), its trace
back. Standard library only (and the app's translations), so a front end that drives a backend never imports
torch."""
from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from urllib.parse import urlsplit

from paradec.production.address import AddressError, http_url
from paradec.traces.trace import MAX_TRACE_BYTES, Trace, TraceError

from .i18n import N_, _

TIMEOUT_S = 600  # a long run on a busy backend: the service answers only when it is done
# What a call's answer() says when it fails; answer() may run on a worker thread, which does not know the
# visitor's language, so each call translates them when it is made (on the script's thread).
STOPPED = N_("the run was stopped")
REFUSED = N_("the backend refused the run ({status}): {message}")
UNREACHABLE = N_("cannot reach the backend at {url}: {error}")
WAITING = N_("waiting for the backend…")


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
        raise BackendError(_("the backend at {url} sent something that is not a trace: {error}").format(
            url=url, error=e)) from None
    if progress:
        progress(1.0, _("done: waited {wait:.1f} s behind {ahead} run(s) on the backend").format(
            wait=float(headers.get("X-Paradec-Wait-S", 0)), ahead=headers.get("X-Paradec-Ahead", "?")))
    return trace


def queue(url: str) -> dict:
    """The backend's queues: model -> {running, waiting, capacity}."""
    raw = _Call(f"{url.rstrip('/')}/queue", None, 5).answer()[0]
    try:
        return json.loads(raw)
    except ValueError as e:
        raise BackendError(_("the backend at {url} answered something unreadable: {error}").format(
            url=url, error=e)) from None


def _queue_text(url: str, model: str | None) -> str:
    try:
        lanes = queue(url)
    except BackendError:
        return _(WAITING)
    lane = lanes.get(model) if model else next(iter(lanes.values()), None)
    if not lane:
        return _(WAITING)
    return (_("on the backend: a run decoding, {waiting} waiting") if lane["running"] else
            _("on the backend: idle, {waiting} waiting")).format(waiting=lane["waiting"])


class _Call:
    """One GET (body None) or POST whose connection another thread may drop (drop())."""

    def __init__(self, url: str, body: dict | None, timeout: float):
        self.url, self.body, self.timeout, self.dropped = url, body, timeout, False
        self.said = {STOPPED: _(STOPPED), REFUSED: _(REFUSED), UNREACHABLE: _(UNREACHABLE)}  # see STOPPED
        try:
            http_url(url, "the backend URL")  # not taught: ui.offered parsed the operator's, this is for other callers
        except AddressError:
            raise BackendError(_("the backend URL {url} is not an http(s) URL").format(url=repr(url[:80]))) from None
        parts = urlsplit(url)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.conn = kind(parts.hostname, parts.port, timeout=timeout)

    def answer(self) -> tuple[bytes, dict]:
        """(the answer's bytes, its headers); every failure as one BackendError line."""
        data = None if self.body is None else json.dumps(self.body).encode()
        try:
            self.conn.connect()
            if self.dropped:  # dropped while connecting
                raise BackendError(self.said[STOPPED])
            self.conn.request("GET" if data is None else "POST", self.path, data, {"Content-Type": "application/json"})
            r = self.conn.getresponse()
            raw = r.read(MAX_TRACE_BYTES + 1)
            if r.status >= 400:
                raise BackendError(self.said[REFUSED].format(status=r.status, message=_message(raw, r.reason)))
            return raw, r.headers
        except (OSError, http.client.HTTPException) as e:
            raise BackendError(self.said[UNREACHABLE].format(
                url=self.url, error=getattr(e, "strerror", None) or e)) from None
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
