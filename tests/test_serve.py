"""python -m paradec serve on loopback: health, a run equal to paradec.run's own, bad requests
refused with one line, the queue (its position, a full line refused) and concurrent requests."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
import uvicorn

from paradec import cli, models, run
from paradec.lanes import Lane, QueueFull
from paradec.serving import serve
from paradec.traces.trace import Trace

# make test only: the service on a loopback port
pytestmark = pytest.mark.slow

TIMINGS = ("wall_s", "draft_ms", "verify_ms", "start_ms")


@pytest.fixture(scope="module")
def tiny(tiny_dir, one_thread):
    """The tiny model loaded from its folder, as `serve --model DIR` loads it."""
    return models.load(str(tiny_dir), "cpu", "float32")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def start(tiny):
    """start(queue) -> (base URL, Service): a real uvicorn server on loopback, in a thread."""
    servers = []

    def _start(queue: int):
        service = serve.Service({tiny.name: tiny}, queue)
        server = uvicorn.Server(uvicorn.Config(serve.create_app(service), host="127.0.0.1", port=_free_port(),
                                               log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            assert thread.is_alive(), "the server did not start"
            time.sleep(0.02)
        servers.append((server, thread))
        return f"http://127.0.0.1:{server.config.port}", service

    yield _start
    for server, thread in servers:
        server.should_exit = True
        thread.join(10)


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def post(url: str, body, path: str = "/run") -> tuple:
    """(status, JSON body, headers) of POST url/run (or path), errors included."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read()), r.headers  # case-insensitive: h11 lowercases names
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), e.headers


def untimed(d):
    """A trace dict without its wall-clock numbers (the only part two equal runs may differ in)."""
    if isinstance(d, dict):
        return {k: untimed(v) for k, v in d.items() if k not in TIMINGS}
    return [untimed(v) for v in d] if isinstance(d, list) else d


REQUESTS = [
    {"method": "ar", "prompt": "Count: one two three", "max_new_tokens": 8},
    {"method": "pld", "prompt": "the cat sat on the mat, the cat sat on", "max_new_tokens": 12, "params": {"k": 4}},
    {"method": "jacobi", "prompt": "Name a colour.", "max_new_tokens": 10, "params": {"block": 4, "init": "pad"}},
    {"method": "sps", "prompt": "Write a haiku.", "max_new_tokens": 10, "temperature": 0.8, "seed": 3,
     "params": {"k": 3}, "draft": "self:1"},
]


def alone(tiny, r: dict) -> Trace:
    draft = models.load_draft(r["draft"], tiny) if r.get("draft") else None
    return run.run(tiny, r["method"], r["prompt"], r.get("params"), r["max_new_tokens"], r.get("temperature", 0.0),
                   seed=r.get("seed", 0), draft=draft)


def test_health_lists_the_model_and_its_queue(start, tiny):
    url, _ = start(2)
    h = get(url + "/health")
    assert h["status"] == "ok" and [m["spec"] for m in h["models"]] == [tiny.name]
    assert h["models"][0]["device"] == "cpu"
    assert h["queues"][tiny.name] == {"running": False, "waiting": 0, "capacity": 2}
    assert get(url + "/queue") == h["queues"]


def test_a_run_returns_the_trace_paradec_run_records(start, tiny):
    url, _ = start(2)
    status, body, headers = post(url, REQUESTS[1])
    assert status == 200 and headers["X-Paradec-Ahead"] == "0" and float(headers["X-Paradec-Wait-S"]) >= 0
    got = Trace.from_dict(body)  # the trace's own format, read back unchanged
    assert untimed(got.to_dict()) == untimed(alone(tiny, REQUESTS[1]).to_dict())


def test_a_batch_returns_each_prompts_trace_as_if_alone(start, tiny):
    url, _ = start(2)
    prompts = ["the cat sat on the mat, the cat sat on", "Count: one two three four", "Hi"]
    status, body, headers = post(url, {"method": "pld", "prompts": prompts, "max_new_tokens": 10,
                                       "params": {"k": 4}}, "/batch")
    assert status == 200 and headers["X-Paradec-Ahead"] == "0" and len(body["traces"]) == 3
    for prompt, got in zip(prompts, body["traces"]):
        want = alone(tiny, {"method": "pld", "prompt": prompt, "max_new_tokens": 10, "params": {"k": 4}})
        assert Trace.from_dict(got).token_ids == want.token_ids


@pytest.mark.parametrize("body, status, message", [
    ({"method": "ar", "prompts": []}, 400, "a batch holds 1 to 64 prompts, got 0"),
    ({"method": "ar", "prompts": ["hi"] * 65}, 400, "a batch holds 1 to 64 prompts, got 65"),
    ({"method": "ar", "prompts": ["hi", "  "]}, 400, "prompt 2: the prompt is empty"),
    ({"method": "ar", "prompts": "hi"}, 422, "prompts: Input should be a valid array"),
    ({"method": "ar", "prompt": "hi", "prompts": ["hi"]}, 422, "prompt: Extra inputs are not permitted"),
])
def test_bad_batches_get_a_4xx_and_one_line(start, body, status, message):
    url, _ = start(2)
    got, answer, _ = post(url, body, "/batch")
    assert got == status and message in answer["error"] and "\n" not in answer["error"], answer


BAD = [
    ({"method": "nope", "prompt": "hi"}, 400, "unknown method 'nope'"),
    ({"method": "pld", "prompt": "hi", "params": {"kk": 2}}, 400, "unknown parameter 'kk'"),
    ({"method": "pld", "prompt": "hi", "params": {"k": 2.5}}, 400, "parameter 'k' expects int"),
    ({"method": "pld", "prompt": "hi", "params": {"k": "many"}}, 400, "parameter 'k' expects int"),
    ({"method": "ar", "prompt": "   "}, 400, "the prompt is empty"),
    ({"method": "ar", "prompt": "x" * 200_001}, 400, "the prompt is too long"),
    ({"method": "ar", "prompt": "hi", "max_new_tokens": 0}, 400, "max new tokens must be between 1 and 2048"),
    ({"method": "ar", "prompt": "hi", "max_new_tokens": 600}, 400, "exceeds the model's context of 512"),
    ({"method": "ar", "prompt": "hi", "max_new_tokens": "8"}, 422, "max_new_tokens: Input should be a valid integer"),
    ({"method": "ar", "prompt": "hi", "top_q": 1}, 422, "top_q: Extra inputs are not permitted"),
    ({"prompt": "hi"}, 422, "method: Field required"),
    ({"method": "sps", "prompt": "hi"}, 400, "sps needs a draft"),
    ({"method": "sps", "prompt": "hi", "draft": "/etc"}, 400, "draft '/etc' is not served here"),
    ({"method": "ar", "prompt": "hi", "model": "other"}, 400, "model 'other' is not served here"),
    (b"{not json", 422, "Invalid JSON"),
]


@pytest.mark.parametrize("body,status,message", BAD, ids=[m for _, _, m in BAD])
def test_bad_requests_get_a_4xx_and_one_line(start, body, status, message):
    url, _ = start(2)
    got, answer, _ = post(url, body)
    assert got == status and message in answer["error"] and "\n" not in answer["error"], answer


def test_a_full_queue_is_refused_and_the_position_is_visible(start, tiny):
    url, service = start(1)
    lane = service.runner.lane(tiny.name)
    with ThreadPoolExecutor(1) as pool, lane.turn():  # the test holds the model: the next run must wait
        waiting = pool.submit(post, url, REQUESTS[0])
        while get(url + "/queue")[tiny.name]["waiting"] < 1:
            time.sleep(0.02)
        assert get(url + "/health")["queues"][tiny.name] == {"running": True, "waiting": 1, "capacity": 1}
        status, answer, headers = post(url, REQUESTS[0])
        assert status == 429 and "the queue is full" in answer["error"] and headers["Retry-After"]
    status, body, headers = waiting.result()
    assert status == 200 and headers["X-Paradec-Ahead"] == "1" and Trace.from_dict(body).new_tokens


def test_concurrent_requests_are_all_answered_as_if_alone(start, tiny):
    url, service = start(len(REQUESTS))
    lane = service.runner.lane(tiny.name)
    with ThreadPoolExecutor(len(REQUESTS)) as pool:
        with lane.turn():  # a run of the test's own holds the model until every request waits in line
            futures = [pool.submit(post, url, r) for r in REQUESTS]
            while lane.status()["waiting"] < len(REQUESTS):
                time.sleep(0.01)
        answers = [f.result() for f in futures]
    assert sorted(int(h["X-Paradec-Ahead"]) for _, _, h in answers) == list(range(1, len(REQUESTS) + 1))
    for r, (status, body, _) in zip(REQUESTS, answers):
        assert status == 200, body
        assert untimed(body) == untimed(alone(tiny, r).to_dict()), r["method"]


class Left(Exception):
    """A run that gave up waiting (a closed browser tab)."""


def test_the_lane_is_first_come_first_served_and_skips_who_left():
    lane, order = Lane(2), []

    def leaves(ahead):
        raise Left

    def quits():
        with pytest.raises(Left), lane.turn(leaves):
            pass

    def waits(name):
        with lane.turn():
            order.append(name)

    with lane.turn() as first:
        assert first.ahead == 0
        quitter = threading.Thread(target=quits)
        quitter.start()
        quitter.join(5)
        threads = [threading.Thread(target=waits, args=(n,)) for n in "ab"]
        for n, t in enumerate(threads, 1):
            t.start()
            while lane.status()["waiting"] < n:  # a arrives before b
                time.sleep(0.01)
        with pytest.raises(QueueFull, match="2 runs waiting"):
            with lane.turn():
                pass
    for t in threads:
        t.join(5)
    assert order == ["a", "b"] and lane.status() == {"running": False, "waiting": 0, "capacity": 2}


@pytest.mark.slow
def test_the_command_line_serves_a_model_folder_and_refuses_bad_flags(tiny_dir, capsys):
    assert cli.main(["serve", "--queue", "-1"]) == 2 and "--queue must be 0 or more" in capsys.readouterr().err
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "paradec", "serve", "--model", str(tiny_dir), "--port", str(port),
                             "--queue", "0"], env={**os.environ, "OMP_NUM_THREADS": "1"}, stderr=subprocess.PIPE)
    try:
        for _ in range(600):
            try:
                health = get(f"http://127.0.0.1:{port}/health")
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
                time.sleep(0.1)
        else:
            pytest.fail("the service did not answer within a minute")
        assert [m["spec"] for m in health["models"]] == [str(tiny_dir)]
        assert health["queues"][str(tiny_dir)]["capacity"] == 0
    finally:
        proc.terminate()
        proc.wait(10)
