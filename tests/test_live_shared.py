"""Many students at once: live runs from many threads share one copy of the model and each gets
the trace it would get alone; a run sent to a backend comes back as a trace without torch, and
an unreachable backend is one error line."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from test_app import live_app
from test_serve import start, tiny, untimed  # noqa: F401 (fixtures: a loopback service on the tiny model)

from paradec import models, run

from helpers import player

ROOT = Path(__file__).resolve().parents[1]
RUNS = [  # (method, params, draft, prompt, temperature)
    ("ar", {}, None, "Count: one two three", 0.0),
    ("pld", {"k": 4}, None, "the cat sat on the mat, the cat sat on", 0.0),
    ("jacobi", {"block": 4}, None, "Name a colour.", 0.0),
    ("lookahead", {"window": 3, "ngram": 3, "candidates": 2}, None, "Say hello twice.", 0.0),
    ("sps", {"k": 3}, "self:1", "Write a haiku.", 0.9),
]


def key(spec: str, method: str, params: dict, draft, prompt: str, temperature: float):
    from ui import live

    return live.Key(spec, "cpu", "float32", draft, method, json.dumps(params, sort_keys=True), prompt, 12,
                    temperature, 1.0, 7)


def test_concurrent_live_runs_share_one_model_and_each_equals_the_run_alone(tiny_dir, one_thread):
    from ui import live

    spec = str(tiny_dir)
    keys = [key(spec, *r) for r in RUNS]
    with ThreadPoolExecutor(len(keys)) as pool:  # every student presses Run at once
        got = list(pool.map(live.run, keys))
        copies = {id(m) for m in pool.map(lambda _: live._live().runner(keys[0]).target(spec), range(4))}
    assert len(copies) == 1  # one copy of the model per process
    alone = models.load(spec, "cpu", "float32")
    for (method, params, draft, prompt, temperature), trace in zip(RUNS, got):
        d = models.load_draft(draft, alone) if draft else None
        expected = run.run(alone, method, prompt, params, 12, temperature, 1.0, 0, 7, d)
        assert untimed(trace.to_dict()) == untimed(expected.to_dict()), method
    assert live._live().runner(keys[0]).lane(spec).status()["running"] is False


BACKEND_RUN = """
import json, sys, threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from ui import live, remote

TRACE = open(sys.argv[1], 'rb').read()
seen = []

class Stub(BaseHTTPRequestHandler):
    def do_GET(self):
        self._send(200, b'{"tiny": {"running": true, "waiting": 2, "capacity": 8}}')
    def do_POST(self):
        seen.append(json.loads(self.rfile.read(int(self.headers['Content-Length']))))
        self._send(200, TRACE, {"X-Paradec-Ahead": "2", "X-Paradec-Wait-S": "1.5"})
    def _send(self, code, body, headers={}):
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass

server = HTTPServer(("127.0.0.1", 0), Stub)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_port}"
k = live.Key("embedded", "backend", "", "self:1", "sps", '{"k": 3}', "hi", 8, 0.0, 1.0, 0, url)
texts = []
trace = live.run(k, lambda f, text=None: texts.append(text))
try:
    live.run(k._replace(prompt="other", backend="http://127.0.0.1:9"))
except live.errors() as e:
    refused = str(e)
print(json.dumps({"steps": len(trace.steps), "sent": seen[0], "texts": texts, "refused": refused,
                  "torch": "torch" in sys.modules}))
"""


def test_a_backend_run_comes_back_as_a_trace_without_importing_torch():
    recorded = next((ROOT / "assets" / "traces").glob("sps-*.json"))
    r = subprocess.run([sys.executable, "-c", BACKEND_RUN, str(recorded)], cwd=ROOT, capture_output=True, text=True,
                       timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["steps"] > 0 and not got["torch"]
    assert got["sent"] == {"method": "sps", "prompt": "hi", "max_new_tokens": 8, "temperature": 0.0, "top_p": 1.0,
                           "seed": 0, "params": {"k": 3}, "draft": "self:1"}  # 'embedded': the backend's own model
    assert "waited 1.5 s behind 2 run(s)" in got["texts"][-1]
    assert got["refused"].startswith("cannot reach the backend at http://127.0.0.1:9/run")


def test_the_app_runs_live_on_a_backend_and_says_when_it_is_unreachable(start, monkeypatch):
    url, _ = start(2)
    monkeypatch.setenv("PARADEC_BACKEND", url)  # the operator's backend: visitors cannot set one
    at = live_app(max_new=8)
    at.switch_page("views/pld.py").run()
    at.button(key="pld.run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("tiny-model" in c.value for c in at.caption) and player(at, "pld")["frames"]  # the backend's trace
    monkeypatch.setenv("PARADEC_BACKEND", "http://127.0.0.1:9")
    down = live_app()
    down.switch_page("views/ar.py").run()
    down.button(key="ar.run").click().run()
    assert not down.exception and any("cannot reach the backend" in e.value for e in down.error)


def test_a_live_run_and_its_ar_baseline_follow_an_untimed_ar_warm_up(monkeypatch):
    """The browser answers the click that starts a live run on the cores the run decodes on: a short AR decode
    takes that, so the method's timing does not pay for it while its AR baseline's does not."""
    import contextlib

    from paradec.serving.live import WARM_UP_TOKENS, Live

    decoded, runs = [], Live(remote=None)  # this test's own runs and results
    monkeypatch.setattr(runs, "turn", lambda k, waiting=None: contextlib.nullcontext())
    monkeypatch.setattr(runs, "decode", lambda k, progress=None: decoded.append((k.method, k.max_new_tokens)) or k)
    k = key("embedded", "eagle3", {"depth": 4}, None, "Name a colour.", 0.0)
    assert runs.run(k, beside=k._replace(method="ar", params="{}")) == k
    assert decoded == [("ar", WARM_UP_TOKENS), ("eagle3", 12), ("ar", 12)]
    runs.run(k)  # cached now: nothing decodes, not even a warm-up
    assert len(decoded) == 3


def test_live_results_are_bounded_and_the_oldest_goes_first():
    from paradec.serving.live import Live

    runs = Live(remote=None, max_results=3)
    for k in range(5):
        runs.keep(k, f"trace {k}")
    assert [runs.cached(k) for k in range(5)] == [None, None, "trace 2", "trace 3", "trace 4"]


def test_a_key_with_a_backend_goes_through_the_transport_and_never_loads_a_model():
    from paradec.serving.live import Live, request_body

    sent = []
    runs = Live(remote=lambda url, body, progress: sent.append((url, body)) or "the backend's trace")
    k = key("embedded", "pld", {"k": 4}, None, "hi", 0.0)._replace(backend="http://gpu:8000", device="backend")
    assert runs.run(k) == "the backend's trace" and runs.run(k) == "the backend's trace"  # the second: cached
    assert sent == [("http://gpu:8000", request_body(k))] and "model" not in sent[0][1] and runs._runners == {}
