"""SGLang's acceptance, where all it offers is its server info: avg_spec_accept_length.

The scheduler adds, per verify step and request, the accepted drafts plus the bonus token to
cum_spec_accept_length and one to cum_spec_accept_count, and reports their ratio in
get_internal_state (python/sglang/srt/managers/scheduler.py), which GET /get_server_info (renamed
/server_info in later versions) returns under internal_states, one entry per data-parallel rank
(older versions put it at the top level). So it is τ in paradec's sense, 1 + accepted / steps, but
CUMULATIVE over the server's whole life: it cannot be differenced, and it covers every request the
server ever decoded, not this run's alone. It is absent until speculation has decoded something, and
always without --speculative-algorithm."""
from __future__ import annotations

from ..core.tree import MAX_NODES
from .client import call, json_of
from .config import EngineError

KEY = "avg_spec_accept_length"
PATHS = ("/get_server_info", "/server_info")
SPEC_FLAG = "--speculative-algorithm EAGLE3 (with its --speculative-draft-model-path)"


def _values(info: dict) -> list[float]:
    states = info.get("internal_states")
    found = [s.get(KEY) for s in states if isinstance(s, dict)] if isinstance(states, list) else []
    found.append(info.get(KEY))
    values = [float(v) for v in found if type(v) in (int, float)]
    if not all(0 <= v <= MAX_NODES + 1 for v in values):  # τ: 1 + accepted drafts per step (0: none yet)
        raise EngineError(f"the server info's {KEY} is not an acceptance length: {values[:4]}")
    return values


def server_info(url: str) -> dict:
    """The first of SGLang's server-info paths that answers."""
    for path in PATHS:
        status, raw = call(url + path, timeout=10)
        if status == 200:
            info = json_of(raw, url + path)
            if isinstance(info, dict):
                return info
    raise EngineError(f"the counters are missing: {url} answers neither {' nor '.join(PATHS)} "
                      "(is it an SGLang server?)")


def accept_length(url: str) -> float:
    """The server's avg_spec_accept_length, averaged over its data-parallel ranks."""
    info = server_info(url)
    values = _values(info)
    if not values:
        algorithm = info.get("speculative_algorithm")
        if algorithm in (None, "", "NONE"):
            raise EngineError(f"speculation is off at {url}: its server info names no speculative_algorithm; start "
                              f"sglang.launch_server with {SPEC_FLAG}")
        raise EngineError(f"the server info of {url} has no {KEY} yet (SGLang reports it once speculation has decoded)")
    return sum(values) / len(values)
