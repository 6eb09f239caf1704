"""Hostile requests to `python -m paradec serve` on loopback: a request never makes the
service open a file, fetch from the hub or echo a file's contents; bodies are capped; malformed
ones get the service's one-line {"error"}; a client that leaves frees its place at once; costs
that grow without bound are refused before a run. Tiny random model, one thread."""
from __future__ import annotations

import http.client
import inspect
import json
import socket
import threading
import time

import pytest
import torch
from safetensors.torch import save_file
from test_serve import get, post, start, tiny  # noqa: F401 (fixtures: a loopback service on the tiny model)

from paradec import catalog, methods
from paradec.drafters import medusa_heads
from paradec.lanes import Lane
from paradec.serving import serve

from helpers import slowed

pytestmark = pytest.mark.usefixtures("one_thread")

# Parameters whose str values are choices the drafter checks itself; any other str parameter names
# weights and must be declared in its drafter's `weights`, which the service guards.
CHOICES = {"tree"}  # a preset's name or JSON paths: parsed, never opened
WEIGHTS = [(m, p.name) for m, d in catalog.METHODS.items() for p in d.params if p.weights]
SECRET = "secret_tensor_name_4242"


@pytest.fixture(scope="module")
def url(start):
    """One service for the module (a server per test would pile up threads until the module ends)."""
    return start(8)[0]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """An existing file with private tensor names, in every form a weight parameter reads."""
    base = tmp_path_factory.mktemp("private")
    folder = base / "weights"
    folder.mkdir()
    for name in ("model.safetensors", "head.safetensors", "adapter.safetensors", medusa_heads.OURS):
        save_file({SECRET: torch.zeros(2)}, str(folder / name))
    (folder / "config.json").write_text(json.dumps({SECRET: 1}))
    return {"file": str(folder / "model.safetensors"), "folder": str(folder), "missing": str(base / "missing"),
            "traversal": "../../../../etc/passwd", "absolute": "/etc/passwd", "hub id": "nobody/nothing",
            "home": "~/.ssh/id_rsa"}


def test_every_string_parameter_is_a_choice_or_declared_weights():
    for method, desc in catalog.METHODS.items():
        for p in desc.params:
            if p.kind is str:
                assert p.choices or p.name in CHOICES or p.weights, f"{method}.{p.name}: declare it in paradec.catalog"
    assert {n for _, n in WEIGHTS} == {"heads", "head", "adapter"}


def _refusal(url: str, body: dict, value: str) -> str:
    t0 = time.perf_counter()
    status, answer, _ = post(url, body)
    assert status == 400 and set(answer) == {"error"}, answer
    assert time.perf_counter() - t0 < 5  # refused, not loaded or fetched
    text = answer["error"]
    assert "\n" not in text and SECRET not in text
    return text.replace(repr(value), "VALUE").replace(value, "VALUE")


@pytest.mark.serial  # on a clock: run alone, not beside other tests
@pytest.mark.parametrize("method, name", WEIGHTS, ids=[f"{m}.{n}" for m, n in WEIGHTS])
def test_a_weight_parameter_never_names_a_file_or_a_hub_id(url, files, method, name):
    messages = {_refusal(url, {"method": method, "prompt": "hi", "params": {name: v}}, v) for v in files.values()}
    assert len(messages) == 1, messages  # the same words for a file that exists, one that does not, a hub id
    assert "not served here" in messages.pop()


@pytest.mark.serial  # on a clock: run alone, not beside other tests
@pytest.mark.parametrize("field", ["draft", "model"])
def test_draft_and_model_never_name_a_file_or_a_hub_id(url, files, field):
    method = "sps" if field == "draft" else "ar"
    messages = {_refusal(url, {"method": method, "prompt": "hi", field: v}, v) for v in files.values()}
    messages |= {_refusal(url, {"method": "sps", "prompt": "hi", "draft": f"trained:{files['folder']}"},
                          f"trained:{files['folder']}")} if field == "draft" else set()
    assert len(messages) == 1 and "not served here" in messages.pop()


def test_weights_the_operator_listed_are_served(tiny, tmp_path):
    folder = tmp_path / "heads"
    folder.mkdir()
    medusa_heads.save(medusa_heads.MedusaHeads(tiny.model.config.hidden_size, 2), folder / medusa_heads.OURS)
    service = serve.Service({"tiny": tiny}, 1, weights=(str(folder),))
    trace, _ = service.run(serve.RunRequest(method="medusa", prompt="hi", max_new_tokens=4,
                                            params={"heads": str(folder), "tree": "[[0], [0, 0]]"}))
    assert trace.new_tokens == 4 and trace.params["heads"] == str(folder)
    with pytest.raises(methods.InputError, match="not served here"):
        service.run(serve.RunRequest(method="medusa", prompt="hi", params={"heads": str(folder) + "/"}))


# ---------------------------------------------------------------- malformed and oversized bodies

MALFORMED = [
    b"", b"null", b"[]", b'"run"', b"123", b"{not json", b"\xff\xfe{}", b'{"method": "ar", "prompt": "\\ud800"}',
    b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 5000 + b"1" + b"}" * 5000,
    b'{"method": "ar", "prompt": "hi", "max_new_tokens": 1' + b"0" * 5000 + b"}",
    b'{"method": "ar", "prompt": "hi", "temperature": NaN}', b'{"method": "ar", "prompt": "hi", "temperature": 1e999}',
    b'{"method": "ar", "prompt": "hi", "seed": 1e3}', b'{"method": "ar", "prompt": "hi", "chat": "yes"}',
    b'{"method": null, "prompt": "hi"}', b'{"method": "ar", "prompt": ["hi"]}', b'{"method": "ar"}',
    b'{"method": "ar", "prompt": "hi", "params": {"k": {"x": 1}}}', b'{"method": "ar", "prompt": "hi", "params": []}',
    b'{"method": "ar", "prompt": "hi", "params": {"k": null}}', b'{"method": "ar", "prompt": "hi", "draft": 5}',
    b'{"method": "ar", "prompt": "hi", "__proto__": {}}', b'{"method": "ar", "method": "pld", "prompt": "hi", "x": 1}',
]


@pytest.mark.parametrize("body", MALFORMED, ids=range(len(MALFORMED)))
def test_a_malformed_body_gets_one_line_422(url, body):
    status, answer, _ = post(url, body)
    assert status == 422 and set(answer) == {"error"} and "\n" not in answer["error"], (status, answer)


def _raw_post(url: str, body, chunked: bool) -> tuple[int, dict]:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("POST", "/run", body=body, headers={"Content-Type": "application/json"}, encode_chunked=chunked)
        r = conn.getresponse()
        return r.status, json.loads(r.read())
    finally:
        conn.close()


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_over_the_cap_is_refused_unread(url, chunked):
    big = b'{"method": "ar", "prompt": "' + b"x" * (serve.MAX_BODY + 10) + b'"}'
    body = iter([big[i:i + 2**16] for i in range(0, len(big), 2**16)]) if chunked else big
    try:
        status, answer = _raw_post(url, body, chunked)
    except (BrokenPipeError, ConnectionResetError):  # the server answered and closed before the rest was sent
        return
    assert status == 413 and "larger than" in answer["error"]


@pytest.mark.parametrize("method, path, status", [("GET", "/run", 405), ("PUT", "/run", 405), ("GET", "/nope", 404),
                                                  ("POST", "/health", 405), ("GET", "/run/../../etc/passwd", 404)])
def test_other_routes_answer_in_the_same_one_line(url, method, path, status):
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request(method, path)
        r = conn.getresponse()
        assert r.status == status and set(json.loads(r.read())) == {"error"}
    finally:
        conn.close()


def test_a_prompt_at_its_cap_fits_under_the_body_cap():
    body = json.dumps({"method": "ar", "prompt": "\U0001f600" * 100_000}).encode()  # 200,000 UTF-16 units, escaped
    assert len(body) < serve.MAX_BODY


# ---------------------------------------------------------------- parameters that cost without bound

BOUNDED = [
    ({"temperature": 1e-40}, "temperature"), ({"temperature": 5e-324}, "temperature"),
    ({"temperature": 1.0, "top_p": 1e-300}, "top-p"), ({"temperature": 1.0, "top_p": 5e-324}, "top-p"),
    ({"method": "pld", "params": {"k": 100_000}}, "k must be between"),
    ({"method": "pld", "params": {"ngram_max": 4000}}, "ngram_max"),
    ({"method": "jacobi", "params": {"block": 100_000}}, "block"),
    ({"method": "lookahead", "params": {"window": 10_000}}, "window"),
    ({"method": "eagle2", "params": {"total_tokens": 100_000}}, "total_tokens"),
    ({"method": "mirror", "params": {"bets": 10_000}, "draft": "self:1"}, "bets"),
    ({"method": "sps", "params": {"k": 10_000}, "draft": "self:1"}, "k must be between"),
    ({"max_new_tokens": 10**9}, "max new tokens"), ({"top_k": -1}, "top-k"), ({"seed": 2**70}, "seed"),
]


@pytest.mark.parametrize("extra, words", BOUNDED, ids=[w for _, w in BOUNDED])
def test_unbounded_costs_are_refused_before_a_run(url, extra, words):
    status, answer, _ = post(url, {"method": "ar", "prompt": "hi", **extra})
    assert status == 400 and words in answer["error"], answer


# ---------------------------------------------------------------- clients that leave

def _send_and_drop(url: str, body: dict) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    s = socket.create_connection((host, int(port)))
    data = json.dumps(body).encode()
    s.sendall(b"POST /run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
              % (len(data), data))
    return s


def _until(condition, seconds: float) -> bool:
    end = time.perf_counter() + seconds
    while not condition():
        if time.perf_counter() > end:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.serial  # on a clock: run alone, not beside other tests
def test_dropped_clients_free_their_places_at_once(start, tiny):
    """Four clients connect and leave, one decoding and three waiting; a fresh client is next."""
    url, service = start(8)
    lane = service.runner.lane(tiny.name)
    with slowed(tiny, 0.02):  # a run of seconds, not milliseconds
        dropped = [_send_and_drop(url, {"method": "ar", "prompt": "hi", "max_new_tokens": 400}) for _ in range(4)]
        assert _until(lambda: lane.status()["waiting"] == 3, 10)
        for s in dropped:
            s.close()
        assert _until(lambda: not lane.status()["running"], 3), lane.status()
    t0 = time.perf_counter()
    status, _, headers = post(url, {"method": "ar", "prompt": "hi", "max_new_tokens": 4})
    assert status == 200 and headers["X-Paradec-Ahead"] == "0" and time.perf_counter() - t0 < 5


def test_a_cancelled_run_stops_at_its_next_step(tiny):
    service = serve.Service({"tiny": tiny}, 1)
    steps = []

    def gone() -> bool:
        steps.append(1)
        return len(steps) > 3

    with pytest.raises(serve.Cancelled):
        service.run(serve.RunRequest(method="ar", prompt="hi", max_new_tokens=200), gone)
    assert len(steps) == 4 and service.queues()["tiny"] == {"running": False, "waiting": 0, "capacity": 1}


def test_a_waiting_run_whose_client_left_leaves_the_line(tiny):
    service = serve.Service({"tiny": tiny}, 2)
    lane: Lane = service.runner.lane("tiny")
    left = threading.Event()
    with lane.turn():
        t = threading.Thread(target=lambda: pytest.raises(serve.Cancelled, service.run,
                                                          serve.RunRequest(method="ar", prompt="hi"), left.is_set))
        t.start()
        assert _until(lambda: lane.status()["waiting"] == 1, 5)
        left.set()
        t.join(5)
        assert lane.status()["waiting"] == 0


def test_serve_command_takes_an_operator_list_of_weights():
    from paradec.cli import parser

    args = parser().parse_args(["serve", "--weights", "/srv/heads", "--weights", "org/heads"])
    assert args.weights == ["/srv/heads", "org/heads"]
    assert "weights" in inspect.signature(serve.Service).parameters
