"""The app's client of `python -m paradec serve`: a run sent to a backend (a GPU box), its trace
back. Standard library only, so a front end that drives a backend never imports torch."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait

from paradec.trace import Trace, TraceError

TIMEOUT_S = 600  # a long run on a busy backend: the service answers only when it is done


class BackendError(RuntimeError):
    """The backend is unreachable or refused the run; the message is one line for the user."""


def run(url: str, body: dict, progress: Callable[[float, str], None] | None = None) -> Trace:
    """POST the run; while it waits and decodes, progress(0, text) shows the backend's queue."""
    url = url.rstrip("/")
    with ThreadPoolExecutor(1) as pool:
        answer = pool.submit(_call, f"{url}/run", body, TIMEOUT_S)
        while not answer.done():  # the script thread owns the page: it polls, the worker waits
            if progress:
                progress(0.0, _queue_text(url, body.get("model")))
            wait([answer], timeout=0.5)
    data, headers = answer.result()
    try:
        trace = Trace.from_dict(data)
    except TraceError as e:
        raise BackendError(f"the backend at {url} sent something that is not a trace: {e}") from None
    if progress:
        progress(1.0, f"done: waited {float(headers.get('X-Paradec-Wait-S', 0)):.1f} s behind "
                      f"{headers.get('X-Paradec-Ahead', '?')} run(s) on the backend")
    return trace


def queue(url: str) -> dict:
    """The backend's queues: model -> {running, waiting, capacity}."""
    return _call(f"{url.rstrip('/')}/queue", None, 5)[0]


def _queue_text(url: str, model: str | None) -> str:
    try:
        lanes = queue(url)
    except BackendError:
        return "waiting for the backend…"
    lane = lanes.get(model) if model else next(iter(lanes.values()), None)
    if not lane:
        return "waiting for the backend…"
    return f"on the backend: {'a run decoding' if lane['running'] else 'idle'}, {lane['waiting']} waiting"


def _call(url: str, body: dict | None, timeout: float) -> tuple[dict, dict]:
    """(JSON answer, headers) of a GET (body None) or POST; every failure as one BackendError line."""
    data = None if body is None else json.dumps(body).encode()
    try:
        req = urllib.request.Request(url, data, {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read()), r.headers
    except urllib.error.HTTPError as e:
        raise BackendError(f"the backend refused the run ({e.code}): {_message(e)}") from None
    except (urllib.error.URLError, OSError) as e:
        raise BackendError(f"cannot reach the backend at {url}: {getattr(e, 'reason', e)}") from None
    except ValueError as e:  # not JSON, or a URL that is not one
        raise BackendError(f"the backend at {url} answered something unreadable: {e}") from None


def _message(e: urllib.error.HTTPError) -> str:
    try:
        return json.loads(e.read()).get("error") or e.reason
    except (ValueError, AttributeError, OSError):
        return str(e.reason)
