"""python -m paradec bench on the tiny random model: the report's schema, the results file
(JSON and CSV), repeats, categories, peers under `methods`, and its input errors."""
import csv
import json

import pytest
from streamlit.testing.v1 import AppTest

from paradec import bench_report
from paradec.cli import main
from ui import bench as ui_bench

from helpers import APP

pytestmark = pytest.mark.usefixtures("one_thread")

ROWS = [
    {"prompt": "a b a b a b a b", "category": "copy"},
    {"turns": ["one two one two one two", "a second turn nobody reads"], "category": "copy", "question_id": 5},
    {"prompt": "hello there", "category": "chat"},
]
METHODS = ["ar", "pld", "sps", "ar_torch", "hf_generate", "hf_prompt_lookup", "hf_assisted"]


@pytest.fixture(scope="module")
def prompts(tmp_path_factory):
    path = tmp_path_factory.mktemp("prompts") / "p.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in ROWS), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def results(tmp_path_factory, tiny_dir, prompts):
    """One bench run: 3 prompts x 2 repeats, every paradec method with a draft, and the peers."""
    out = tmp_path_factory.mktemp("bench") / "tiny.json"
    code = main(["bench", "--methods", "pld,sps", "--prompts", str(prompts), "--model", str(tiny_dir),
                 "--device", "cpu", "--draft", "self:1", "--max-new-tokens", "6", "--repeats", "2",
                 "--peers", "hf", "--json", "--out", str(out)])
    assert code == 0
    return out


def test_report_schema(results, tiny_dir):
    report = bench_report.load(results)
    assert report["schema"] == bench_report.SCHEMA and report["kind"] == bench_report.KIND
    assert list(report["methods"]) == METHODS  # AR first, the peers under methods too
    assert set(report["categories"]) == {"copy", "chat"}
    assert report["prompts"] == 3 and report["repeats"] == 2 and report["model"] == str(tiny_dir)
    assert report["draft"] and "1 layer" in report["draft"]
    assert {"cpu", "cores", "torch_threads", "torch", "device", "dtype"} <= set(report["machine"])
    for group in [report["methods"], *report["categories"].values()]:
        for name, m in group.items():
            assert set(bench_report.METRICS) | {"acceptance_by_position", "decode_tokens_per_s"} == set(m), name
    ar, sps = report["methods"]["ar"], report["methods"]["sps"]
    assert ar["speedup"] == 1.0 and ar["tau"] == 1.0 and ar["runs"] == 6
    assert report["categories"]["copy"]["ar"]["runs"] == 4 and report["categories"]["chat"]["ar"]["runs"] == 2
    for name in ("pld", "sps"):  # greedy in float32: exactly AR's tokens
        assert report["methods"][name]["identical_runs"] == 6
    assert report["methods"]["hf_generate"]["tau"] is None  # generate reports no forward count
    assert report["methods"]["hf_generate"]["decode_tokens_per_s"] is None  # nor when its prompt's pass ended
    assert ar["decode_tokens_per_s"] > 0 and sps["decode_tokens_per_s"] > 0
    torch_ar = report["methods"]["ar_torch"]  # AR on torch's products: the kernel's baseline, its own row
    assert torch_ar["tau"] == 1.0 and torch_ar["runs"] == 6 and torch_ar["identical_runs"] >= 0
    fastest = bench_report.fastest_ar(report)
    assert fastest in ("ar", "ar_torch")
    assert bench_report.speedup_over_fastest_ar(report, fastest) == pytest.approx(1.0, abs=2e-3)
    assert bench_report.speedup_over_fastest_ar(report, "sps") <= report["methods"]["sps"]["speedup"] + 1e-3
    depths = [row[0] for row in sps["acceptance_by_position"]]
    assert depths == list(range(1, len(depths) + 1)) and depths
    assert all(0 <= share <= 1 and reached <= drafted for _, drafted, reached, share in sps["acceptance_by_position"])
    assert report["methods"]["hf_generate"]["acceptance_by_position"] == []
    assert ar["acceptance"] is None is report["methods"]["hf_generate"]["acceptance"]  # nothing drafted: no α
    assert 0 <= sps["drafted_accepted"] <= sps["acceptance"] <= 1  # tested drafts are among the drafted ones
    mem = report["memory"]["methods"]  # paradec.bench_memory: one untimed run per paradec row
    assert set(mem) == {"ar", "pld", "sps"} and mem["sps"]["weights_draft"] > 0 == mem["ar"]["weights_draft"]
    assert all(m["peak"] >= m["weights_target"] > 0 for m in mem.values())


def test_csv_beside_the_json(results):
    with open(results.with_suffix(".csv"), newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == (1 + 2) * len(METHODS)  # overall, then each category
    assert [r["method"] for r in rows[: len(METHODS)]] == METHODS and rows[0]["category"] == "all"
    report = bench_report.load(results)
    sps = next(r for r in rows if r["category"] == "chat" and r["method"] == "sps")
    assert float(sps["speedup"]) == report["categories"]["chat"]["sps"]["speedup"]
    assert float(rows[2]["peak_mib"]) > 0 and sps["peak_mib"] == ""  # memory: overall rows of paradec's methods


def test_plain_output_is_a_table(capfd, tiny_dir, prompts):
    code = main(["bench", "--methods", "pld", "--prompts", str(prompts), "--model", str(tiny_dir), "--limit", "1",
                 "--max-new-tokens", "3"])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert out.splitlines()[1].split()[:3] == ["method", "speedup", "tau"] and out.splitlines()[2].startswith("ar ")


def one_line_error(capfd, args, *words):
    code = main(["bench", *map(str, args)])
    out, err = capfd.readouterr()
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("paradec: error:"), err
    for w in words:
        assert w in err


def test_input_errors_come_before_any_decoding(capfd, prompts, tmp_path):
    base = ["--methods", "pld", "--prompts", prompts, "--model", tmp_path / "no-model"]
    one_line_error(capfd, [*base, "--out", tmp_path / "missing" / "r.json"], "cannot write results")
    one_line_error(capfd, [*base, "--repeats", "0"], "--repeats")
    one_line_error(capfd, [*base, "--threads", "100000"], "--threads")


def test_load_refuses_what_is_not_a_results_file(tmp_path):
    for text, words in [("not json", "not JSON"), ('{"schema": 1}', "not a paradec benchmark"),
                        (json.dumps({"schema": 1, "kind": "paradec-bench", "methods": {"pld": {}}}), "AR")]:
        (tmp_path / "r.json").write_text(text)
        with pytest.raises(bench_report.ResultsError, match=words):
            bench_report.load(tmp_path / "r.json")


# ---------------------------------------------------------------- the Benchmark page (AppTest)

def open_page(page: str, **session) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in session.items():
        at.session_state[k] = v
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_page_without_results_says_how_to_make_them(monkeypatch, tmp_path):
    monkeypatch.setattr(ui_bench, "BENCH_DIR", tmp_path)
    at = open_page("views/benchmark.py")
    assert any("--out assets/bench/" in i.value for i in at.info) and not at.get("plotly_chart")


def test_page_draws_a_results_file(monkeypatch, results):
    monkeypatch.setattr(ui_bench, "BENCH_DIR", results.parent)
    at = open_page("views/benchmark.py")
    assert at.selectbox(key="bench.file").value == results.stem
    assert len(at.get("plotly_chart")) == 4 and len(at.dataframe) == 3  # methods, memory, every category
    text = " ".join(m.value for m in at.markdown)
    assert "[MEASURED]" in text and "[FROM RUN]" in text
    cpu = bench_report.load(results)["machine"]["cpu"]
    assert any(cpu in c.value and "torch threads" in c.value for c in at.caption)


def test_page_small_live_run_on_the_tiny_model(monkeypatch, tmp_path, tiny_dir):
    monkeypatch.setattr(ui_bench, "BENCH_DIR", tmp_path)
    monkeypatch.setenv("PARADEC_MODELS", str(tiny_dir))  # the operator offers it
    at = open_page("views/benchmark.py", **{"sb.source": "live", "sb.model": str(tiny_dir), "sb.max_new": 8})
    at.button(key="bench.run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.exception] + [e.value for e in at.error]
    assert at.selectbox(key="bench.file").value == "live run (this session)"
    assert len(at.get("plotly_chart")) == 4 and str(tiny_dir) in " ".join(c.value for c in at.caption)


def test_one_method_under_several_settings_is_one_row_each():
    from paradec.bench import variants
    from paradec.methods import InputError

    got = variants("pld,sps[draft_length=learned;k=8],sps,lookahead[window=3]")
    assert got == {"ar": ("ar", []), "pld": ("pld", []),
                   "sps[draft_length=learned;k=8]": ("sps", ["draft_length=learned", "k=8"]),
                   "sps": ("sps", []), "lookahead[window=3]": ("lookahead", ["window=3"])}
    with pytest.raises(InputError, match="unknown parameter"):
        variants("sps[nope=1]")


def test_a_run_that_differs_from_ar_says_where_and_how_close_the_target_was(tiny_loaded):
    """The first differing position and the target's top-2 logit gap after AR's tokens up to it."""
    import torch

    from paradec.bench import differences

    row = {"id": 7, "category": "copy"}
    ar = {"tokens": [5, 6, 7, 8], "prompt_ids": [1, 2, 3]}
    runs = {"ar": [(row, ar)], "pld": [(row, {**ar, "tokens": [5, 6, 9, 8]})], "sps": [(row, dict(ar))],
            "cllm": [(row, {**ar, "tokens": [5, 6, 7]})]}
    found = differences(tiny_loaded, runs, {"ar": ("ar", []), "pld": ("pld", []), "sps": ("sps", []),
                                            "cllm": ("cllm", [])})
    assert [(d["method"], d["position"], d["token"], d["ar_token"], d["expected"]) for d in found] == [
        ("pld", 2, 9, 7, False), ("cllm", 3, None, 8, True)]  # sps equals AR: not listed
    with torch.no_grad():
        top = torch.topk(tiny_loaded.model(input_ids=torch.tensor([[1, 2, 3, 5, 6]])).logits[0, -1], 2).values
    assert found[0]["top2_gap"] == pytest.approx(float(top[0] - top[1]), abs=1e-5)
    ar_row = {"speedup": 1.0, "tau": 1.0, "acceptance": None, "drafted_accepted": None, "tokens_per_s": 9.0,
              "identical_runs": 1, "runs": 1}
    text = bench_report.format_report({"model": "m", "draft": None, "prompts": 1, "max_new_tokens": 4,
                                       "machine": {"device": "cpu"}, "methods": {"ar": ar_row}, "timed": "the decoding",
                                       "differences": [{**found[0], "top2_gap": 3e-7}, found[1]]})
    assert "pld on prompt 7 (copy) at token 2: 9 for AR's 7, top-2 logit gap 3.00e-07 (a near-tie)" in text
    assert "expected: another model" in text and "timed: the decoding" in text


def test_the_report_says_what_is_timed_and_lists_no_difference_when_all_agree(results):
    report = json.loads(results.read_text())
    assert "propose, verify pass" in report["timed"]
    paradec_methods = {d["method"] for d in report["differences"]} & {"pld", "sps"}
    assert not paradec_methods  # greedy float32 on the tiny model: both equal AR on every prompt


def test_page_opens_on_the_main_benchmark():
    at = open_page("views/benchmark.py")
    assert at.selectbox(key="bench.file").value == ui_bench.MAIN
