"""The production engine peer against tools/standin_engine.py on loopback (vLLM's and SGLang's
documented formats): parsing, counters differenced on a server that served others first, the figures
against hand-computed values, the step trace, every error in one line naming the flag, and the bench
and service that use it."""
from __future__ import annotations

import json
import socket

import pytest

from paradec import bench_report
from paradec.cli import main
from paradec.production import config, steps, vllm, workload
from paradec.production.config import EngineError
from paradec.traces.trace import Trace
from tools.standin_engine import Running, StandIn

# make test only: engines on loopback servers
pytestmark = pytest.mark.slow

SETTINGS = {"max_new_tokens": 10, "temperature": 0.0, "top_p": 1.0, "top_k": 0, "seed": 0}
ROWS = [{"id": 1, "category": "a", "prompt": "one two three"}, {"id": 2, "category": "b", "prompt": "x y"}]
# StandIn's default: k = 3 drafts a step, accepting 3, 0, 1, 2, 3, 0, ... Its warm(1) (16 tokens) takes
# six steps (3 0 1 2 3 0); then 10 tokens take [1, 2, 3] (1 + 2 + 3 + 4 = 10: the prefill's token and
# three steps), and the next 10 take [0, 1, 2, 3], the last step cut after 3 of its 4 tokens.
# Tested positions (a chain: accepted + 1, or k when all k were accepted): 2 + 3 + 3 and 1 + 2 + 3 + 3.
FIRST = {"drafts": 3, "draft_tokens": 9, "accepted": 6, "tested": 8, "positions": [[1, 3, 3], [2, 3, 2], [3, 3, 1]]}
SECOND = {"drafts": 4, "draft_tokens": 12, "accepted": 6, "tested": 9, "positions": [[1, 4, 3], [2, 4, 2], [3, 4, 1]]}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peer_at(url: str, extra: str = "") -> config.Peer:
    return config.parse(f"vllm={url}{extra}")


@pytest.mark.parametrize("per_request", ["none", "summary", "detailed"])
def test_counts_per_request_or_differenced_on_a_server_that_served_others(per_request):
    with Running(StandIn(per_request=per_request)) as engine:
        engine.engine.warm(1)
        runs, section, trace = workload.run(workload.Session(peer_at(engine.url)), ROWS, SETTINGS)
    got = [{k: rec[k] for k in FIRST} for _, rec in runs["vllm"]]
    assert got == [FIRST, SECOND]
    assert section["counters"] == {"drafts": 7, "draft_tokens": 21, "accepted": 12, "per_position": [6, 4, 2]}
    assert section["source"] == {"none": "Prometheus counters, differenced", "summary": "per-request metrics (summary)",
                                 "detailed": "per-request metrics (detailed)"}[per_request]
    assert (trace is not None) == (per_request == "detailed")


def test_the_derived_figures_by_hand():
    with Running(StandIn(per_request="detailed", step_ms=2)) as engine, Running(StandIn(spec=False, step_ms=2)) as base:
        engine.engine.warm(1)
        runs, section, _ = workload.run(workload.Session(peer_at(engine.url, f",baseline={base.url}")), ROWS, SETTINGS)
    report = bench_report.aggregate(runs, ROWS, {})
    m, b = report["methods"]["vllm"], report["methods"]["vllm_baseline"]
    assert m["tau"] == round(1 + 12 / 7, 3)  # 1 + accepted / drafts
    assert m["acceptance"] == round(12 / 17, 3) and m["drafted_accepted"] == round(12 / 21, 3)
    assert b["acceptance"] is None is b["drafted_accepted"]  # the baseline drafts nothing: no acceptance
    assert m["acceptance_by_position"] == [[1, 7, 6, 0.857], [2, 7, 4, 0.571], [3, 7, 2, 0.286]]
    tps = [sum(r["completion_tokens"] for _, r in rs) / sum(r["wall_s"] for _, r in rs) for rs in runs.values()]
    assert m["speedup"] == round(tps[0] / tps[1], 3) and m["speedup"] > 1  # 3-4 forwards a prompt against 10
    assert m["identical_runs"] == 2 and b == {**b, "speedup": 1.0, "tau": 1.0, "identical_runs": 2}
    assert report["categories"]["b"]["vllm"]["tau"] == 2.5  # 1 + 6 / 4
    assert section["notes"] == []


def test_the_step_trace_is_the_engines_steps():
    with Running(StandIn(per_request="detailed")) as engine:
        engine.engine.warm(1)
        _, _, trace = workload.run(workload.Session(peer_at(engine.url, ",method=eagle3")), ROWS, SETTINGS)
    trace = Trace.from_json(trace.to_json())  # a trace like any other: paradec's checks pass
    assert trace.method == "vllm:eagle3" and [len(s.tokens) for s in trace.steps] == [2, 3, 4]
    assert [[n.status for n in s.nodes] for s in trace.steps] == [
        ["accepted", "rejected", "unreached"], ["accepted", "accepted", "rejected"], ["accepted"] * 3]
    assert [s.origins[-1] for s in trace.steps] == ["resampled", "resampled", "bonus"]
    assert trace.tau == 3.0 == 1 + 6 / 3 and trace.by_position() == [(1, 3, 3), (2, 3, 2), (3, 3, 1)]
    assert trace.steps[0].context_len == 3 + 1 and trace.new_tokens == 10 - 1  # the prefill's token is no step


def test_a_last_step_past_the_budget_is_cut_as_paradec_cuts_its_own():
    answer = {"text": "t", "prompt_tokens": 2, "completion_tokens": 10, "wall_s": 0.1}
    trace = steps.trace_of(peer_at("http://h"), "x y", answer, ([0, 1, 2, 3], [3, 3, 3, 3]), SETTINGS)
    assert [len(s.tokens) for s in trace.steps] == [1, 2, 3, 3] and trace.steps[-1].origins == ["accepted"] * 3
    assert trace.tau == 9 / 4  # committed tokens per step, where vLLM's counters say 1 + 6 / 4
    Trace.from_json(trace.to_json())


def test_prometheus_text_is_parsed_per_model_and_summed_over_engines():
    text = "\n".join([
        "# TYPE vllm:spec_decode_num_drafts counter",
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 4.0',
        'vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 6.0',
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="other"} 100.0',
        'vllm:spec_decode_num_drafts_created{engine="0",model_name="m"} 1.7e9',
        'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 30.0',
        'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 12.0',
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 3.0',
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 9.0', ""])
    c = vllm.parse_metrics(text, "m", "http://h")
    assert (c.drafts, c.draft_tokens, c.accepted, c.per_pos) == (10, 30, 12, {0: 9, 1: 3})
    before = vllm.Counters(4, 12, 5, {0: 4, 1: 1})
    assert c.since(before) == vllm.Counts(6, 18, 7, [5, 2])
    assert c.since(before).tested() is None  # 3 drafts a step but only 2 positions counted: no way to tell
    assert vllm.Counts(6, 12, 7, [5, 2]).tested() == 6 + 5  # every draft drafted both positions
    with pytest.raises(EngineError, match="restarted"):
        before.since(c)


def test_sglang_reads_the_servers_lifetime_figure_and_says_so():
    with Running(StandIn(kind="sglang")) as engine:
        engine.engine.warm(1)  # 6 steps, 9 accepted: (9 + 6) / 6
        runs, section, trace = workload.run(workload.Session(config.parse(f"sglang={engine.url}")), ROWS, SETTINGS)
    assert section["accept_length_server_life"] == round((15 + 9 + 10) / 13, 4)  # not this run's (19 / 7)
    assert "cumulative over the server's life" in " ".join(section["notes"]) and trace is None
    assert bench_report.aggregate(runs, ROWS, {})["methods"]["sglang"]["tau"] is None


def one_line(match: str, *flags: str):
    def check(e: pytest.ExceptionInfo) -> None:
        text = str(e.value)
        assert "\n" not in text and match in text and all(f in text for f in flags), text
    return check


def test_every_error_is_one_line_naming_what_is_missing_and_the_flag():
    down = f"http://127.0.0.1:{closed_port()}"
    cases = [(lambda: workload.Session(peer_at(down)), one_line("unreachable", "vllm serve"))]
    with Running(StandIn()) as on, Running(StandIn(spec=False)) as off, Running(StandIn(kind="sglang")) as sgl, \
            Running(StandIn(kind="sglang", spec=False)) as sgl_off, Running(StandIn(per_request="summary")) as summary:
        cases += [
            (lambda: workload.Session(peer_at(on.url, ",model=llama")), one_line("wrong model", "stand-in/model")),
            (lambda: workload.complete(on.url, "llama", "p", SETTINGS, "vllm engine"), one_line("wrong model", "404")),
            (lambda: workload.one(peer_at(off.url), "p", SETTINGS),
             one_line("speculation is off", "--speculative-config")),
            (lambda: workload.one(peer_at(sgl.url), "p", SETTINGS),
             one_line("counters are missing", "--disable-log-stats")),
            (lambda: workload.Session(peer_at(on.url, f",baseline={on.url}")),
             one_line("runs speculative decoding", "without --speculative-config")),
            (lambda: workload.one(config.parse(f"sglang={sgl_off.url}"), "p", SETTINGS),
             one_line("speculation is off", "--speculative-algorithm")),
            (lambda: vllm.steps_of(workload.complete(summary.url, "stand-in/model", "p", SETTINGS, "e")["raw"]
                                   ["metrics"]["speculative_decoding"]),
             one_line("per_step_accepted is absent", "--per-request-spec-decode-metrics detailed")),
        ]
        for call, check in cases:
            with pytest.raises(EngineError) as e:
                call()
            check(e)


def test_a_per_request_field_absent_names_it_and_the_flag():
    class Partial(StandIn):
        def count(self, steps):
            spec = super().count(steps)
            del spec["num_spec_steps"]
            return spec

    with Running(Partial(per_request="summary")) as engine, pytest.raises(EngineError) as e:
        workload.one(peer_at(engine.url), "p", SETTINGS)
    one_line("num_spec_steps is absent", "--per-request-spec-decode-metrics")(e)


@pytest.mark.parametrize("spec, words", [
    ("tgi=http://h", "KIND=URL"), ("vllm=ftp://h", r"http\(s\) URL"), ("vllm=http://h,speed=9", "model=NAME"),
    ("vllm=http://h,method=warp", "not one paradec knows"), ("vllm=http://h,model=a,model=b", "at most once")])
def test_a_malformed_peer_is_refused(spec, words):
    with pytest.raises(EngineError, match=words):
        config.parse(spec)


def test_one_peer_per_kind():
    assert len(config.parse_all(["vllm=http://a", "sglang=http://b"])) == 2
    with pytest.raises(EngineError, match="names one twice"):
        config.parse_all(["vllm=http://a", "vllm=http://b"])


def test_a_peer_as_the_operator_writes_it(monkeypatch):
    p = config.parse("vllm=http://gpu:8000/v1/,model=meta/Llama,method=EAGLE3,baseline=https://gpu:8001")
    assert p == config.Peer("vllm", "http://gpu:8000", "meta/Llama", "eagle3", "https://gpu:8001")
    assert p.matching == "eagle3" and config.parse("vllm=http://h,method=ngram").matching == "pld"
    monkeypatch.setenv(config.ENV, "sglang=http://box:30000")
    assert config.from_env().kind == "sglang"
    monkeypatch.delenv(config.ENV)
    assert config.from_env() is None


# ---------------------------------------------------------------- bench --peers vllm=... (tiny model)

@pytest.fixture(scope="module")
def prompts(tmp_path_factory):
    path = tmp_path_factory.mktemp("prompts") / "p.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in ROWS), encoding="utf-8")
    return path


def test_bench_adds_the_engines_rows_in_the_peers_schema(tmp_path, tiny_dir, prompts, capfd, one_thread):
    out = tmp_path / "r.json"
    with Running(StandIn(per_request="detailed")) as engine, Running(StandIn(spec=False)) as base:
        code = main(["bench", "--methods", "jacobi", "--prompts", str(prompts), "--model", str(tiny_dir),
                     "--max-new-tokens", "10", "--peers", f"vllm={engine.url},method=ngram,baseline={base.url}",
                     "--out", str(out)])
    printed, err = capfd.readouterr()
    assert code == 0, err
    report = bench_report.load(out)
    # ngram's match joins the methods; ar_torch: AR on torch's products
    assert list(report["methods"]) == ["ar", "jacobi", "pld", "ar_torch", "vllm", "vllm_baseline"]
    for group in [report["methods"], *report["categories"].values()]:
        assert set(group["vllm"]) == set(bench_report.METRICS) | {"acceptance_by_position"}
    assert report["methods"]["vllm"]["tau"] == 2.5  # a fresh stand-in: [3, 0, 1, 2] each prompt, 1 + 12 / 8
    section = report["engines"]["vllm"]
    assert section["matching"] == "pld" and section["trace"]["method"] == "vllm:ngram"
    assert section["paradec_trace"]["method"] == "pld" and section["paradec_trace"]["prompt"] == ROWS[0]["prompt"]
    assert "vllm: vllm at" in printed and "speedup against vllm_baseline" in printed


def test_bench_refuses_an_unreachable_engine_before_loading_anything(tmp_path, prompts, capfd):
    code = main(["bench", "--methods", "pld", "--prompts", str(prompts), "--model", str(tmp_path / "no-model"),
                 "--peers", f"vllm=http://127.0.0.1:{closed_port()}"])
    err = capfd.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "--peers vllm: the vllm engine is unreachable" in err, err


# ---------------------------------------------------------------- serve --engine (the service's start-up option)

def post(url: str, body: dict) -> tuple[int, dict]:
    from paradec.production.client import call, json_of

    status, raw = call(url, body)
    return status, json_of(raw, url)


def test_the_service_asks_only_the_engines_named_at_start_up(tiny_loaded):
    import threading
    import time

    import uvicorn

    from paradec.serving import serve

    with Running(StandIn(per_request="detailed")) as engine:
        peers = (peer_at(engine.url, ",method=eagle3"), config.parse(f"sglang=http://127.0.0.1:{closed_port()}"))
        server = uvicorn.Server(uvicorn.Config(serve.create_app(serve.Service({"tiny": tiny_loaded}, engines=peers)),
                                               host="127.0.0.1", port=closed_port(), log_level="warning"))
        threading.Thread(target=server.run, daemon=True).start()
        while not server.started:
            time.sleep(0.02)
        base = f"http://127.0.0.1:{server.config.port}"
        try:
            from paradec.production.client import call, json_of

            listed = json_of(call(base + "/engines")[1], base)
            assert [e["name"] for e in listed] == ["vllm", "sglang"] and engine.url not in json.dumps(listed)
            status, got = post(base + "/engine", {"engine": "vllm", "prompt": "one two three", "max_new_tokens": 10})
            assert status == 200 and got["record"]["accepted"] == 6 and Trace.from_dict(got["trace"]).tau == 9 / 4
            assert post(base + "/engine", {"engine": engine.url, "prompt": "p"})[0] == 400  # a URL is no name
            status, err = post(base + "/engine", {"engine": "sglang", "prompt": "p"})
            assert status == 502 and "unreachable" in err["error"]
            assert post(base + "/engine", {"engine": "vllm", "prompt": "p", "max_new_tokens": "9"})[0] == 422
        finally:
            server.should_exit = True


def test_the_matching_method_joins_the_bench_unless_it_is_there_under_settings_of_its_own():
    from paradec.bench import engines as _engines
    from paradec.bench import variants

    with Running(StandIn()) as engine:
        spec = f"vllm={engine.url},method=ngram"
        assert list(_engines(["hf", spec], names := variants("jacobi")) and names) == ["ar", "jacobi", "pld"]
        assert list(_engines([spec], names := variants("pld[k=4]")) and names) == ["ar", "pld[k=4]"]


def test_per_request_metrics_stand_in_for_counters_that_cannot_be_read(monkeypatch):
    def no_metrics(url):
        raise EngineError(f"the counters are missing: {url}/metrics answered 404")

    monkeypatch.setattr(workload, "_metrics_text", no_metrics)
    with Running(StandIn(per_request="summary")) as engine:
        engine.engine.warm(1)
        runs, section, _ = workload.run(workload.Session(peer_at(engine.url)), ROWS, SETTINGS)
    assert [rec["accepted"] for _, rec in runs["vllm"]] == [6, 6] and "counters" not in section


def test_an_answer_of_absurd_sizes_is_refused_before_any_work():
    spec = {"num_spec_steps": 1, "num_draft_tokens": 10**9, "num_accepted_draft_tokens": 0, "num_spec_tokens": 10**9,
            "acceptance_histogram": [1, 0], "per_step_accepted": [0], "per_step_drafted": [10**9]}
    with pytest.raises(EngineError, match="more than 256"):
        vllm.per_request({"metrics": {"speculative_decoding": spec}})
    with pytest.raises(EngineError, match="more than 256"):
        vllm.steps_of(spec)


def test_serve_refuses_a_malformed_engine_before_loading_a_model(capfd):
    code = main(["serve", "--engine", "vllm=http://a", "--engine", "tgi=http://b"])
    err = capfd.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "--engine: an engine peer is KIND=URL" in err, err
