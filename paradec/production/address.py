"""Addresses the operator or a user gives (an engine's URL, the app's backend, a Ray cluster), parsed once where
they are given: a malformed one is one line then, never a ValueError at the first call that uses it.
Standard library only: the app reads it without torch."""
from __future__ import annotations

from urllib.parse import urlsplit

MAX_SHOWN = 80  # an error quotes at most this much of what it was given


class AddressError(ValueError):
    """A malformed address; the message is one line for the user."""


def _parts(url: str, what: str, expected: str, given: str | None = None):
    """urlsplit's parts with the port read (and so checked) now; AddressError saying what is wrong with
    `given` (what the user typed: url unless url was made from it)."""
    def bad(why: str) -> AddressError:
        return AddressError(f"{what} {(given or url)[:MAX_SHOWN]!r} is not {expected}: {why}")

    if not url.isprintable() or any(c.isspace() for c in url):
        raise bad("it holds a space or a control character")
    try:
        parts = urlsplit(url)
    except ValueError:  # "http://[::1"
        raise bad("a bracket is left open") from None
    try:
        port = parts.port
    except ValueError:  # 99999, "abc", "-1"
        port = 0
    if port == 0 or (parts.netloc.endswith(":") and port is None):
        raise bad("the port must be a number from 1 to 65535")
    if not parts.hostname:
        raise bad("it names no host")
    return parts


def http_url(value: str, what: str, example: str = "http://gpu-box:8000") -> str:
    """value as an http(s) URL to a host, with a valid port if any, without a trailing slash. AddressError,
    naming `what`, for anything else (the operator's typo, refused whole rather than guessed at)."""
    url = value.strip().rstrip("/")
    expected = f"an http(s) URL such as {example}"
    if _parts(url, what, expected).scheme not in ("http", "https"):
        raise AddressError(f"{what} {url[:MAX_SHOWN]!r} is not {expected}: it must start with http:// or https://")
    return url


def ray_address(value: str) -> str:
    """A Ray cluster's address as ray.init takes it: auto, or [ray://]HOST:PORT. AddressError otherwise."""
    value = value.strip()
    if value == "auto":
        return value
    scheme, sep, rest = value.rpartition("://")
    expected = "auto, HOST:6379 or ray://HOST:10001"
    if sep and scheme != "ray":
        raise AddressError(f"address {value[:MAX_SHOWN]!r} is not {expected}: the only scheme is ray://")
    parts = _parts(f"ray://{rest}", "address", expected, value)
    if parts.port is None or parts.path or parts.query:
        raise AddressError(f"address {value[:MAX_SHOWN]!r} is not {expected}: it needs HOST:PORT and "
                           "nothing after it")
    return value
