"""Prompts through an engine peer and its baseline, one request at a time (batch 1, as paradec
decodes), each answer timed by the client and read for its acceptance: a record per request in
the shape paradec.bench_report aggregates, and the engine's section of the report."""
from __future__ import annotations

import time

from ..traces.trace import Trace
from ..traces.trace_check import MAX_PROMPT_IDS
from . import sglang, vllm
from .client import Unreachable, call, json_of, message
from .config import EngineError, Peer
from .steps import trace_of

TIMEOUT_S = 600  # one completion of a long answer on a busy server
SERVE = {"vllm": "vllm serve MODEL", "sglang": "python -m sglang.launch_server --model-path MODEL"}


def served_model(url: str, wanted: str | None, role: str, kind: str) -> str:
    """The model name to ask for: `wanted` when the server lists it, else the only one it lists."""
    try:
        status, raw = call(url + "/v1/models", timeout=10)
    except Unreachable as e:
        raise EngineError(f"the {role} is unreachable: {e} (is `{SERVE[kind]}` running there?)") from None
    data = json_of(raw, url + "/v1/models") if status == 200 else None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise EngineError(f"the {role} at {url} has no OpenAI-compatible /v1/models ({status}): is it {kind}?")
    names = [m.get("id") for m in data["data"] if isinstance(m, dict)]
    if wanted is None and len(names) == 1:
        return names[0]
    if wanted not in names:
        said = f"not {wanted!r}" if wanted else "name one with model=NAME"
        raise EngineError(f"wrong model: the {role} at {url} serves {', '.join(map(str, names)) or 'nothing'}, "
                          f"{said} (the name it was started with --served-model-name, or its model path)")
    return wanted


def complete(url: str, model: str, prompt: str, settings: dict, role: str) -> dict:
    """One /v1/completions request, greedy or sampled as paradec's run: its text, token counts, wall
    seconds (the client's) and the whole answer ("raw")."""
    body = {"model": model, "prompt": prompt, "max_tokens": settings["max_new_tokens"], "stream": False,
            "temperature": settings["temperature"], "top_p": settings["top_p"], "seed": settings["seed"],
            **({"top_k": settings["top_k"]} if settings.get("top_k") else {})}
    t0 = time.perf_counter()
    status, raw = call(url + "/v1/completions", body, TIMEOUT_S)
    wall = time.perf_counter() - t0
    if status == 404:
        raise EngineError(f"wrong model: the {role} at {url} answered 404: {message(raw)}")
    if status != 200:
        raise EngineError(f"the {role} at {url} refused the completion ({status}): {message(raw)}")
    answer = json_of(raw, url + "/v1/completions")
    try:
        text, usage = answer["choices"][0]["text"], answer["usage"]
        tokens = (usage["prompt_tokens"], usage["completion_tokens"])
    except (KeyError, IndexError, TypeError):
        raise EngineError(f"the {role} at {url} sent a completion without choices[0].text and usage") from None
    # Another machine's answer: a trace is built with as many positions as it says (list(range(n)))
    if not isinstance(text, str) or not (_count(tokens[0], MAX_PROMPT_IDS)
                                         and _count(tokens[1], settings["max_new_tokens"])):
        raise EngineError(f"the {role} at {url} sent a completion whose text is not text, or whose usage counts are "
                          f"not token counts (at most {MAX_PROMPT_IDS} prompt and {settings['max_new_tokens']} "
                          "completion tokens)")
    model = answer.get("model")
    return {"text": text, "prompt_tokens": tokens[0], "completion_tokens": tokens[1], "wall_s": wall,
            "model": model if isinstance(model, str) and len(model) <= 200 else None, "raw": answer}


def _count(value, most: int) -> bool:
    return type(value) is int and 0 <= value <= most  # type(): JSON true is not a count


class Session:
    """One engine peer, checked once (reachable, the model served, speculation on, the baseline
    without it), then asked prompt after prompt."""

    def __init__(self, peer: Peer):
        self.peer = peer
        self.model = served_model(peer.url, peer.model, f"{peer.kind} engine", peer.kind)
        if peer.baseline:
            served_model(peer.baseline, self.model, "baseline", peer.kind)
            self._check_baseline()
        self.sources: set[str] = set()
        self.counters_error: EngineError | None = None
        self.first = self.scrape()
        if self.counters_error:
            self._probe()

    def _probe(self) -> None:
        """Without counters, a one-token request tells whether per-request metrics stand in for them
        (vLLM writes an all-zero object then): known before anything else is run, not after."""
        answer = complete(self.peer.url, self.model, "Hello", {"max_new_tokens": 1, "temperature": 0.0,
                                                                  "top_p": 1.0, "seed": 0}, f"{self.peer.kind} engine")
        if vllm.per_request(answer["raw"]) is None:
            raise self.counters_error

    def _check_baseline(self) -> None:
        on = (vllm.has_speculation(_metrics_text(self.peer.baseline)) if self.peer.kind == "vllm"
              else sglang.server_info(self.peer.baseline).get("speculative_algorithm") not in (None, "", "NONE"))
        if on:
            flag = "--speculative-config" if self.peer.kind == "vllm" else "--speculative-algorithm"
            raise EngineError(f"the baseline at {self.peer.baseline} runs speculative decoding: "
                              f"start it without {flag}")

    def scrape(self) -> vllm.Counters | None:
        """vLLM's counters now (None, with the reason kept, when they cannot be read: per-request
        metrics may still be there); SGLang has none to difference."""
        if self.peer.kind != "vllm":
            return None
        try:
            return vllm.parse_metrics(_metrics_text(self.peer.url), self.model, self.peer.url)
        except EngineError as e:
            self.counters_error = e
            return None

    def ask(self, prompt: str, settings: dict, want_trace: bool = False) -> tuple[dict, Trace | None]:
        """One prompt on the engine: its record and, when asked and reported, its step trace."""
        before = self.scrape()
        answer = complete(self.peer.url, self.model, prompt, settings, f"{self.peer.kind} engine")
        after = self.scrape()
        counts, trace = self._read(answer, before, after, prompt, settings, want_trace)
        return _record(self.peer.kind, answer, counts), trace

    def _read(self, answer, before, after, prompt, settings, want_trace):
        spec = vllm.per_request(answer["raw"]) if self.peer.kind == "vllm" else None
        if spec is not None:
            detailed = "per_step_accepted" in spec
            self.sources.add("per-request metrics" + (" (detailed)" if detailed else " (summary)"))
            arrays = vllm.steps_of(spec) if want_trace and detailed else None
            trace = arrays and trace_of(self.peer, prompt, answer, arrays, settings)
            return vllm.counts_of(spec), trace
        if self.peer.kind == "sglang":
            self.sources.add("server info")
            return None, None
        if before is None or after is None:
            raise self.counters_error or EngineError("vLLM's counters could not be read")
        self.sources.add("Prometheus counters, differenced")
        return after.since(before), None

    def ask_baseline(self, prompt: str, settings: dict) -> dict:
        answer = complete(self.peer.baseline, self.model, prompt, settings, "baseline")
        return _record(self.peer.kind, answer, vllm.Counts(0, 0, 0))

    def section(self) -> dict:
        """The report's account of this engine: what it is, where its figures come from, and the
        workload's own counter difference (vLLM) or the server's lifetime figure (SGLang)."""
        p = self.peer
        out = {"kind": p.kind, "url": p.url, "model": self.model, "method": p.method, "matching": p.matching,
               "baseline": p.baseline, "source": ", ".join(sorted(self.sources)) or "none", "notes": self.notes()}
        last = self.scrape()
        if self.first is not None and last is not None:
            c = last.since(self.first)
            out["counters"] = {"drafts": c.drafts, "draft_tokens": c.draft_tokens, "accepted": c.accepted,
                               "per_position": c.reached}
        if p.kind == "sglang":
            out["accept_length_server_life"] = round(sglang.accept_length(p.url), 4)
        return out


    def notes(self) -> list[str]:
        """What the engine's figures leave out, in one line each."""
        out = []
        if self.peer.kind == "vllm" and not any("detailed" in s for s in self.sources):
            out.append(f"no step trace: vLLM writes per-step arrays with {vllm.PER_REQUEST_FLAG} detailed")
        if self.peer.kind == "sglang":
            out.append("SGLang reports avg_spec_accept_length only, cumulative over the server's life: no per-request "
                       "or per-position figures, and earlier traffic is in it")
        if not self.peer.baseline:
            out.append("no baseline URL: no speedup (name the same model served without speculation, baseline=URL)")
        return out


def _metrics_text(url: str) -> str:
    try:
        status, raw = call(url + "/metrics", timeout=10)
    except Unreachable as e:
        raise EngineError(f"the counters are missing: {e}") from None
    if status != 200:
        raise EngineError(f"the counters are missing: {url}/metrics answered {status} (vLLM serves it unless started "
                          "with --disable-log-stats)")
    return raw.decode("utf-8", "replace")


def _record(kind: str, answer: dict, counts: vllm.Counts | None) -> dict:
    """One request as bench_report reads an engine's run."""
    rec = {"engine": kind, "text": answer["text"], "completion_tokens": answer["completion_tokens"],
           "prompt_tokens": answer["prompt_tokens"], "wall_s": answer["wall_s"], "drafts": None, "draft_tokens": None,
           "accepted": None, "tested": None, "positions": None}
    if counts is not None:
        rec.update(drafts=counts.drafts, draft_tokens=counts.draft_tokens, accepted=counts.accepted,
                   tested=counts.tested(), positions=counts.positions())
    return rec


def run(session: Session, rows: list[dict], settings: dict) -> tuple[dict, dict, Trace | None]:
    """Every prompt row on the engine, then on its baseline: ({row name: [(row, record)]}, the engine's
    section, the first prompt's step trace when the engine reports steps). The counters' difference
    over the workload starts here, not when the session was checked."""
    peer, session.first = session.peer, session.scrape()
    runs: dict[str, list] = {peer.name: [], f"{peer.name}_baseline": []} if peer.baseline else {peer.name: []}
    first_trace = None
    for n, row in enumerate(rows):
        rec, trace = session.ask(row["prompt"], settings, want_trace=n == 0)
        first_trace = first_trace or trace
        runs[peer.name].append((row, rec))
        if peer.baseline:
            runs[f"{peer.name}_baseline"].append((row, session.ask_baseline(row["prompt"], settings)))
    return runs, session.section(), first_trace


def one(peer: Peer, prompt: str, settings: dict) -> dict:
    """One prompt on the engine and its baseline: what the service's POST /engine and the app's live
    run show (the records, the engine's section, its step trace as a dict or None)."""
    session = Session(peer)
    rec, trace = session.ask(prompt, settings, want_trace=True)
    base = session.ask_baseline(prompt, settings) if peer.baseline else None
    return {"record": rec, "baseline": base, "section": session.section(), "trace": trace and trace.to_dict()}
