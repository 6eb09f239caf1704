"""The few HTTP calls an engine peer needs, standard library only, every failure one line."""
from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

from ..traces import safe_json
from .config import EngineError

MAX_BYTES = 16 * 2**20  # an answer larger than this is not one of the engine's


class Unreachable(EngineError):
    """Nothing answered at the URL (refused, timed out, no such host)."""


def call(url: str, body: dict | None = None, timeout: float = 30.0) -> tuple[int, bytes]:
    """GET (body None) or POST a JSON body; (status, the answer's bytes). Unreachable when nothing answers."""
    parts = urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = kind(parts.hostname, parts.port, timeout=timeout)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    data = None if body is None else json.dumps(body).encode()
    try:
        conn.request("GET" if data is None else "POST", path, data, {"Content-Type": "application/json"})
        answer = conn.getresponse()
        return answer.status, answer.read(MAX_BYTES + 1)
    except (OSError, http.client.HTTPException) as e:
        raise Unreachable(f"cannot reach {url}: {getattr(e, 'strerror', None) or e or type(e).__name__}") from None
    finally:
        conn.close()


def json_of(raw: bytes, url: str):
    """An engine's answer, read as hostile input: no number past 19 digits, none infinite (1e999), no deep
    nesting (paradec.traces.safe_json), so what the answer holds stays something a page and a report can use."""
    try:
        return safe_json.loads(raw)
    except safe_json.Malformed as e:
        raise EngineError(f"{url} answered JSON that paradec does not read: {e}") from None
    except (ValueError, RecursionError):
        raise EngineError(f"{url} answered something that is not JSON: {raw[:60]!r}") from None


def message(raw: bytes) -> str:
    """An OpenAI-style error's message ({"error": {"message"}}, {"message"} or {"detail"}), else the text."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return raw[:200].decode("utf-8", "replace").strip()
    if isinstance(data, dict):
        err = data.get("error")
        found = err.get("message") if isinstance(err, dict) else err or data.get("message") or data.get("detail")
        if found:
            return str(found)[:200]
    return str(data)[:200]
