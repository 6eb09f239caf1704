"""The Production engine page (AppTest): the shipped format example drawn, labelled as one; a live
prompt on the operator's engine (the stand-in on loopback) beside paradec on the tiny model; an
unreachable or malformed engine is one error box. The Benchmark page shows the engine's rows."""
from __future__ import annotations

import socket

import pytest
from streamlit.testing.v1 import AppTest

from paradec import bench_report
from tools.standin_engine import Running, StandIn
from ui import bench as ui_bench

from helpers import APP, player

# make test only: AppTest runs against engines on loopback servers
pytestmark = pytest.mark.slow

EXAMPLE = ui_bench.BENCH_DIR / "vllm-format-example.json"


def open_page(page: str, **session) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in session.items():
        at.session_state[k] = v
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def text(at: AppTest) -> str:
    return " ".join(x.value for kind in (at.markdown, at.caption, at.warning, at.info, at.error) for x in kind)


def test_the_shipped_example_is_drawn_and_says_it_is_a_format_example():
    report = bench_report.load(EXAMPLE)
    assert report["example"].startswith("Format example") and report["engines"]["vllm"]["trace"]
    at = open_page("views/production.py")
    assert at.selectbox(key="production.file").value == "vllm-format-example"
    assert any("Format example" in w.value for w in at.warning)
    assert len(at.get("plotly_chart")) == 2  # τ, per position
    assert {"engine", "mine"} <= set(player(at, "production")["frames"][0]["figs"])  # the two runs' steps
    table = at.dataframe[0].value
    assert list(table["run"]) == ["eagle3", "vllm", "vllm_baseline"]
    assert list(table["speedup against"]) == ["paradec's AR", "vllm_baseline", "itself"]
    assert "cumulative over the server's whole life" in text(at) and "no tree" in text(at)
    assert "step 2 of" in player(at, "production")["frames"][1]["story"]


def test_the_benchmark_page_shows_the_engines_rows():
    at = open_page("views/benchmark.py", **{"bench.file": "vllm-format-example"})
    rows = at.dataframe[0].value
    assert "vllm" in list(rows["method"]) and "vllm_baseline" in list(rows["method"])
    assert "own baseline URL" in text(at) and any("Format example" in w.value for w in at.warning)


def test_a_live_prompt_on_the_operators_engine(monkeypatch, tiny_dir):
    monkeypatch.setenv("PARADEC_MODELS", str(tiny_dir))
    with Running(StandIn(per_request="detailed")) as engine, Running(StandIn(spec=False)) as base:
        monkeypatch.setenv("PARADEC_ENGINE", f"vllm={engine.url},method=ngram,baseline={base.url}")
        at = open_page("views/production.py", **{"sb.model": str(tiny_dir), "sb.max_new": 16})
        assert "operator's vllm engine serves method **ngram**" in text(at)
        at.button(key="production.run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.exception] + [e.value for e in at.error]
    assert at.selectbox(key="production.file").value == "live run (this session)"
    assert list(at.dataframe[0].value["run"]) == ["pld", "vllm", "vllm_baseline"]


@pytest.mark.parametrize("spec, words", [("vllm=http://127.0.0.1:{port}", "unreachable"),
                                          ("vllm=ftp://nowhere", "PARADEC_ENGINE")])
def test_an_unreachable_or_malformed_engine_is_one_error_box(monkeypatch, spec, words):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("PARADEC_ENGINE", spec.format(port=port))
    at = open_page("views/production.py")
    if "production.run" in [b.key for b in at.button]:  # a well-formed engine: the box comes when it is asked
        at.button(key="production.run").click().run()
    assert len(at.error) == 1 and words in at.error[0].value and not at.exception


def test_a_misbehaving_engine_is_one_error_box(monkeypatch):
    from test_production_hostile import Hostile

    with Running(Hostile("prompt_tokens", "1e999", per_request="detailed")) as engine:
        monkeypatch.setenv("PARADEC_ENGINE", f"vllm={engine.url},method=ngram")
        at = open_page("views/production.py")
        at.button(key="production.run").click().run()
    assert not at.exception and len(at.error) == 1 and "does not read" in at.error[0].value, at.error
