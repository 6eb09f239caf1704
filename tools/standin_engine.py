"""A stand-in for a vLLM or SGLang server, on loopback, answering in the formats those engines
document, so that paradec's engine peer is tested (and tried) with no GPU:

- GET /v1/models, POST /v1/completions (OpenAI-compatible; 404 with vLLM's error object for a model
  it does not serve); with per_request "summary" or "detailed", each answer carries vLLM's
  metrics.speculative_decoding (docs: features/speculative_decoding/acceptance_metrics);
- GET /metrics (kind vllm): Prometheus text written by prometheus_client itself, with the counters and
  labels of vllm/v1/spec_decode/metrics.py (vllm:spec_decode_num_drafts, ..._num_draft_tokens,
  ..._num_accepted_tokens, ..._num_accepted_tokens_per_pos{position}), registered only when
  speculation is on, as vLLM does;
- GET /get_server_info (kind sglang): internal_states[0].avg_spec_accept_length, cumulative.

It decodes nothing: the answer's tokens are the prompt's words, over and over, and each verify step
accepts the next count of `accepts` (cycled), so a test can compute every figure by hand. `step_ms`
sleeps per forward, which gives the example a throughput to compare.

    python tools/standin_engine.py --port 8000 --per-request detailed     # a speculative "vLLM"
    python tools/standin_engine.py --port 8001 --no-spec                   # its baseline
"""
from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import prometheus_client as prom


class StandIn:
    def __init__(self, kind: str = "vllm", model: str = "stand-in/model", spec: bool = True, k: int = 3,
                 accepts: tuple[int, ...] = (3, 0, 1, 2), per_request: str = "none", step_ms: float = 0.0):
        self.kind, self.model, self.spec, self.k, self.accepts = kind, model, spec, k, accepts
        self.per_request, self.step_ms, self.cycle = per_request, step_ms, 0
        self.registry = prom.CollectorRegistry()
        labels = ["model_name", "engine"]
        prom.Gauge("vllm:num_requests_running", "Number of requests in model execution batches.", labels,
                   registry=self.registry).labels(model, "0").set(0)
        self.cum = [0, 0]  # SGLang: accepted tokens + bonus, verify steps
        if spec:
            self.counters = {
                n: prom.Counter(f"vllm:spec_decode_{n}", n, labels, registry=self.registry).labels(model, "0")
                for n in ("num_drafts", "num_draft_tokens", "num_accepted_tokens")}
            per_pos = prom.Counter("vllm:spec_decode_num_accepted_tokens_per_pos",
                                   "Accepted tokens per draft position.", labels + ["position"], registry=self.registry)
            self.per_pos = [per_pos.labels(model, "0", str(i)) for i in range(k)]

    def decode(self, prompt: str, max_tokens: int) -> tuple[list[str], list[int]]:
        """The answer's words and the per-step accepted counts (the prefill gives the first word)."""
        words = prompt.split() or ["word"]
        steps, produced = [], 1
        while self.spec and produced < max_tokens:
            a = self.accepts[self.cycle % len(self.accepts)]
            self.cycle += 1
            steps.append(a)
            produced += a + 1
        time.sleep(self.step_ms / 1e3 * (1 + (len(steps) if self.spec else max_tokens - 1)))
        return [words[i % len(words)] for i in range(max_tokens)], steps

    def count(self, steps: list[int]) -> dict:
        """Add a request's steps to the counters; its metrics.speculative_decoding."""
        hist = [steps.count(j) for j in range(self.k + 1)]
        spec = {"mean_acceptance_length": 1 + sum(steps) / len(steps) if steps else 1.0,
                "draft_acceptance_rate": sum(steps) / (self.k * len(steps)) if steps else 0.0,
                "acceptance_histogram": hist, "num_spec_steps": len(steps), "num_accepted_draft_tokens": sum(steps),
                "num_draft_tokens": self.k * len(steps), "num_spec_tokens": self.k}
        if self.per_request == "detailed":
            spec.update(per_step_accepted=list(steps), per_step_drafted=[self.k] * len(steps))
        self.cum[0] += sum(steps) + len(steps)
        self.cum[1] += len(steps)
        if self.spec:
            self.counters["num_drafts"].inc(len(steps))
            self.counters["num_draft_tokens"].inc(self.k * len(steps))
            self.counters["num_accepted_tokens"].inc(sum(steps))
            for i, c in enumerate(self.per_pos):
                c.inc(sum(a > i for a in steps))
        return spec

    def complete(self, body: dict) -> tuple[int, dict]:
        if body.get("model") != self.model:
            return 404, {"error": {"message": f"The model `{body.get('model')}` does not exist.",
                                   "type": "NotFoundError", "param": "model", "code": 404}}
        words, steps = self.decode(str(body.get("prompt", "")), int(body.get("max_tokens", 16)))
        spec = self.count(steps)
        answer = {"id": f"cmpl-{self.cycle}", "object": "text_completion", "created": int(time.time()),
                  "model": self.model, "choices": [{"index": 0, "text": " " + " ".join(words), "logprobs": None,
                                                    "finish_reason": "length"}],
                  "usage": {"prompt_tokens": len(str(body.get("prompt", "")).split()), "completion_tokens": len(words),
                            "total_tokens": len(words) + len(str(body.get("prompt", "")).split())}}
        if self.kind == "vllm" and self.per_request != "none":
            answer["metrics"] = {"speculative_decoding": spec if self.spec else None}
        return 200, answer

    def server_info(self) -> dict:
        state = {"last_gen_throughput": 0.0}
        if self.spec and self.cum[1]:
            state["avg_spec_accept_length"] = self.cum[0] / self.cum[1]
        return {"speculative_algorithm": "EAGLE3" if self.spec else None, "internal_states": [state]}

    def warm(self, prompts: int, max_tokens: int = 16) -> None:
        """Serve `prompts` requests nobody in the test asked for: a server that has been up a while."""
        for n in range(prompts):
            self.complete({"model": self.model, "prompt": f"earlier traffic {n}", "max_tokens": max_tokens})


def handler(engine: StandIn) -> type:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet: tests read their own output
            pass

        def _send(self, status: int, body, content_type: str = "application/json") -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": engine.model, "object": "model"}]})
            elif self.path == "/metrics" and engine.kind == "vllm":
                self._send(200, prom.generate_latest(engine.registry), prom.CONTENT_TYPE_LATEST)
            elif self.path == "/get_server_info" and engine.kind == "sglang":
                self._send(200, engine.server_info())
            else:
                self._send(404, {"detail": "Not Found"})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if self.path == "/v1/completions":
                self._send(*engine.complete(body))
            else:
                self._send(404, {"detail": "Not Found"})

    return Handler


class Running:
    """A stand-in served on loopback in a thread: `with Running(StandIn(...)) as s: s.url`."""

    def __init__(self, engine: StandIn, port: int = 0):
        self.engine = engine
        self.server = ThreadingHTTPServer(("127.0.0.1", port), handler(engine))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "Running":
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--kind", choices=["vllm", "sglang"], default="vllm")
    p.add_argument("--model", default="stand-in/model")
    p.add_argument("--no-spec", action="store_true", help="serve as the baseline: no speculation")
    p.add_argument("--per-request", choices=["none", "summary", "detailed"], default="none")
    p.add_argument("--step-ms", type=float, default=20.0)
    a = p.parse_args()
    engine = StandIn(a.kind, a.model, not a.no_spec, per_request=a.per_request, step_ms=a.step_ms)
    Running(engine, a.port).server.serve_forever()


if __name__ == "__main__":
    main()
