"""A misbehaving engine: its answers are hostile input. Counts of 1e999 or 400
digits, counts of the wrong type or past what was asked, NaN counters, an impossible acceptance
length: each is one EngineError line for the library, a 502 with {"error"} from the service's
/engine (never a 500), and an error box on the Production engine page (test_production_page.py)."""
from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from paradec.production import config, sglang, vllm, workload
from paradec.production.config import EngineError
from paradec.serving import serve
from tools.standin_engine import Running, StandIn

SETTINGS = {"max_new_tokens": 8, "temperature": 0.0, "top_p": 1.0, "top_k": 0, "seed": 0}
MARK = '"PLACEHOLDER"'


class Hostile(StandIn):
    """The stand-in, but its completions' usage.<field> is the raw JSON text `raw`."""

    def __init__(self, field: str, raw: str, **kw):
        super().__init__(**kw)
        self.field, self.raw = field, raw

    def complete(self, body: dict):
        status, answer = super().complete(body)
        if status == 200:
            answer["usage"][self.field] = "PLACEHOLDER"
        return status, json.dumps(answer).replace(MARK, self.raw).encode()


ANSWERS = [("prompt_tokens", "1e999"), ("prompt_tokens", "9" * 400), ("prompt_tokens", "Infinity"),
           ("prompt_tokens", "-1"), ("prompt_tokens", "2.5"), ("prompt_tokens", '"12"'), ("prompt_tokens", "true"),
           ("prompt_tokens", str(10**9)), ("completion_tokens", str(10**6)), ("completion_tokens", "NaN")]


def peer(url: str) -> config.Peer:
    return config.parse(f"vllm={url},method=eagle3")


@pytest.fixture(scope="module")
def hostile():
    """One misbehaving engine for the module; each test sets what it answers."""
    with Running(Hostile("prompt_tokens", "1", per_request="detailed")) as engine:
        yield engine


@pytest.mark.parametrize("field, raw", ANSWERS, ids=[f"{f}={r[:12]}" for f, r in ANSWERS])
def test_an_engines_absurd_usage_is_one_line(hostile, field, raw):
    hostile.engine.field, hostile.engine.raw = field, raw
    with pytest.raises(EngineError) as e:
        workload.one(peer(hostile.url), "one two three", SETTINGS)
    assert "\n" not in str(e.value) and len(str(e.value)) < 300


def test_the_service_answers_502_not_500(hostile, tiny_loaded):
    client = TestClient(serve.create_app(serve.Service({"tiny": tiny_loaded}, engines=(peer(hostile.url),))),
                        raise_server_exceptions=False)
    for raw in ("1e999", "9" * 400):
        hostile.engine.raw = raw
        r = client.post("/engine", json={"engine": "vllm", "prompt": "one two", "max_new_tokens": 8})
        assert r.status_code == 502 and set(r.json()) == {"error"}, r.text
        assert hostile.url not in r.text and "<vllm>" in r.text  # where the engine is stays the operator's


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-1", "1e300"])
def test_counters_that_are_no_counts_are_refused(value):
    text = f'vllm:spec_decode_num_drafts_total{{model_name="m"}} {value}\n'
    with pytest.raises(EngineError, match="not a count"):
        vllm.parse_metrics(text, "m", "http://engine")


@pytest.mark.parametrize("value", [-1.0, 1e300, float("nan")])
def test_an_acceptance_length_no_draft_could_have_is_refused(value):
    with pytest.raises(EngineError, match="not an acceptance length"):
        sglang._values({"internal_states": [{sglang.KEY: value}]})
