"""Hostile requests, service side: every number a request carries is bounded
where all front ends check it (paradec.run.validate), so no trace is written that its loader refuses;
refused EAGLE requests read no head and valid ones read it once; error bodies name no folder of the
server's; a malformed Content-Length is a 4xx. Tiny random model, one thread."""
from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
from test_serve import post, start, tiny  # noqa: F401 (fixtures: a loopback service on the tiny model)

from paradec import catalog, cli, run, runner
from paradec.drafters import eagle_head
from paradec.serving import serve
from paradec.serving.requests import RunRequest
from paradec.traces.trace import Trace

pytestmark = pytest.mark.usefixtures("one_thread")

ROOT = Path(serve.__file__).resolve().parents[2]
HUGE = int("9" * 400)


@pytest.fixture(scope="module")
def url(start):
    return start(4)[0]


NUMBERS = [({"top_k": 10**30}, "top-k"), ({"top_k": HUGE}, "top-k"), ({"seed": 2**64 - 1}, "seed"),
           ({"seed": -(2**63) - 1}, "seed"), ({"seed": HUGE}, "seed"), ({"max_new_tokens": -HUGE}, "max new tokens")]


@pytest.mark.parametrize("extra, words", NUMBERS, ids=[f"{w} {len(str(e))}" for e, w in NUMBERS])
def test_a_number_past_its_bound_is_one_short_line(url, extra, words):
    status, answer, _ = post(url, {"method": "ar", "prompt": "hi", **extra})
    assert status == 400 and set(answer) == {"error"} and words in answer["error"], answer
    assert len(answer["error"]) < 120 and "\n" not in answer["error"]


def test_every_numeric_method_parameter_has_a_range():
    """What a request's "params" may carry: parse_params checks each number against its range."""
    for method, desc in catalog.METHODS.items():
        for p in desc.params:
            if p.kind in (int, float):
                assert p.low is not None and abs(p.high) < 2**31, f"{method}.{p.name}: give it a range"


def test_the_cli_refuses_a_huge_top_k_in_one_line(tiny_dir, capfd):
    code = cli.main(["run", "--model", str(tiny_dir), "--method", "ar", "--prompt", "hi", "--top-k", str(10**30)])
    err = capfd.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "top-k" in err, err


def test_the_widest_accepted_sampling_makes_a_trace_that_loads(tiny):
    r = runner.Runner(loaded={"tiny": tiny})
    for seed in run.SEEDS:
        request = runner.Request("ar", "hi", max_new_tokens=2, temperature=1.0, top_k=run.MAX_TOP_K, seed=seed)
        trace, _ = r.run(request)
        assert Trace.from_json(trace.to_json()).sampling == {**trace.sampling, "seed": seed, "top_k": run.MAX_TOP_K}


# ---------------------------------------------------------------- EAGLE heads: refused unread, read once

@pytest.fixture
def reads(monkeypatch) -> list:
    """The folders eagle_head.load reads from, in order."""
    seen, real = [], eagle_head.load
    monkeypatch.setattr(eagle_head, "load", lambda folder: seen.append(str(folder)) or real(folder))
    return seen


def test_refused_eagle_requests_read_no_head(url, reads):
    for method in ("eagle", "eagle2", "eagle3") * 3:  # the shipped heads are wider than the tiny target
        status, answer, _ = post(url, {"method": method, "prompt": "hi", "max_new_tokens": 4})
        assert status == 400 and "does not fit a target of width" in answer["error"], answer
    assert reads == []


def test_a_head_is_read_once_for_every_run_that_asks_for_it(tiny, tmp_path, reads):
    folder = str(tmp_path / "head")
    eagle_head.save(eagle_head.EagleHead(tiny.model.config, 1), folder, tiny.model.config, {})
    service = serve.Service({"tiny": tiny}, 2, weights=(folder,))
    for params in ({"head": folder}, {"head": folder, "tree": "chain4"}, {"head": folder}):
        service.run(RunRequest(method="eagle", prompt="hi", max_new_tokens=4, params=params))
    with pytest.raises(serve.methods.InputError, match="EAGLE-3 head"):  # refused from its config, unread
        service.run(RunRequest(method="eagle3", prompt="hi", max_new_tokens=4, params={"head": folder}))
    assert reads == [folder]


# ---------------------------------------------------------------- what error bodies show

@pytest.mark.parametrize("body", [{"method": "cllm", "prompt": "hi"},
                                  {"method": "sps", "prompt": "hi", "draft": "trained"}], ids=["cllm", "sps"])
def test_errors_name_no_folder_of_the_server(url, body):
    status, answer, _ = post(url, body)
    assert status == 400 and "assets/drafters/" in answer["error"], answer
    for folder in (str(ROOT), sys.prefix, str(Path.home())):
        assert folder + "/" not in answer["error"]


def test_public_messages_are_one_cut_line():
    text = serve.public(f"in {ROOT}/assets/x\nand {sys.prefix}/lib " + "9" * 5000)
    assert text.startswith("in assets/x and <python>/lib 999") and len(text) == serve.MAX_ERROR


def test_a_negative_content_length_is_a_4xx(url):
    """The HTTP parser (uvicorn's httptools or h11) refuses it before the app sees the request: its
    own plain-text 400, which no app code can shape into JSON (paradec.serving.serve's docstring says so)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"POST /run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: -5\r\n\r\n{}")
        status_line = s.recv(4096).split(b"\r\n")[0]
    assert status_line.startswith(b"HTTP/1.1 4"), status_line
