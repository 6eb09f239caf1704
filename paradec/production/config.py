"""An engine peer as the operator names it: KIND=URL[,model=NAME][,method=METHOD][,baseline=URL].

    vllm=http://gpu-box:8000,model=meta-llama/Llama-3.1-8B-Instruct,method=eagle3,baseline=http://gpu-box:8001

KIND is vllm or sglang; URL is the OpenAI-compatible server (with or without its /v1); model is the
name it serves (default: the only one /v1/models lists); method is the one it was started with
(vLLM's --speculative-config "method", SGLang's --speculative-algorithm), which picks the paradec
method it is compared with; baseline is the same model served without speculation."""
from __future__ import annotations

import os
from dataclasses import dataclass

from .address import AddressError, http_url

ENV = "PARADEC_ENGINE"  # the app's operator setting, read from the environment
KINDS = ("vllm", "sglang")
# An engine's method name -> the paradec method that drafts the same way (None: none does).
MATCHING = {
    "eagle": "eagle", "eagle3": "eagle3", "medusa": "medusa", "ngram": "pld", "draft_model": "sps",
    "standalone": "sps", "lookahead": "lookahead", "mtp": None, "nextn": None, "suffix": None,
}


class EngineError(ValueError):
    """An engine that cannot be asked or read as configured; the message is one line for the user."""


@dataclass(frozen=True)
class Peer:
    kind: str  # vllm | sglang
    url: str  # the server's root, without /v1
    model: str | None = None  # the served model's name; None: the one the server lists
    method: str | None = None  # the engine's own name for its speculative method
    baseline: str | None = None  # the same model without speculation, for the speedup

    @property
    def name(self) -> str:
        """The report's row for this engine; its baseline's row is name + "_baseline"."""
        return self.kind

    @property
    def matching(self) -> str | None:
        """The paradec method that drafts as this engine's method does."""
        return MATCHING.get((self.method or "").lower())


def _url(value: str, what: str) -> str:
    """http(s) to a host (a valid port if any), without a trailing slash or /v1: anything else is the
    operator's typo."""
    try:
        url = http_url(value, what)
    except AddressError as e:
        raise EngineError(str(e)) from None
    return url[:-3] if url.endswith("/v1") else url


def parse(spec: str) -> Peer:
    """KIND=URL[,model=NAME][,method=METHOD][,baseline=URL] -> Peer (EngineError when malformed)."""
    head, *rest = [part.strip() for part in spec.split(",")]
    kind, sep, url = head.partition("=")
    if not sep or kind not in KINDS:
        raise EngineError(f"an engine peer is KIND=URL[,model=NAME][,method=METHOD][,baseline=URL] with KIND "
                          f"{' or '.join(KINDS)}, got {spec[:80]!r}")
    options = {}
    for part in rest:
        key, sep, value = part.partition("=")
        if not sep or key not in ("model", "method", "baseline") or not value or key in options:
            raise EngineError(f"engine option {part[:40]!r}: expected model=NAME, method=METHOD or baseline=URL, "
                              "each at most once")
        options[key] = value
    method = options.get("method", "").lower() or None
    if method is not None and method not in MATCHING:
        raise EngineError(f"engine method {method!r} is not one paradec knows ({', '.join(MATCHING)})")
    baseline = _url(options["baseline"], "baseline") if "baseline" in options else None
    return Peer(kind, _url(url, f"the {kind} URL"), options.get("model"), method, baseline)


def parse_all(specs: list[str]) -> list[Peer]:
    """Several peers (bench's --peers, serve's --engine): one per kind, since a report's rows are named by it."""
    peers = [parse(spec) for spec in specs]
    kinds = [p.kind for p in peers]
    if len(set(kinds)) < len(kinds):
        raise EngineError(f"one engine peer per kind: {', '.join(kinds)} names one twice")
    return peers


def from_env() -> Peer | None:
    """The app's engine (PARADEC_ENGINE), None when the operator set none."""
    spec = os.environ.get(ENV, "").strip()
    return parse(spec) if spec else None
