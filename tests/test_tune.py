"""python -m paradec tune on the tiny model: the search (successive halving's schedule, candidates, the front),
the state file and its resumption, the preset file that run and bench load, and the Tune page."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from paradec import catalog
from paradec.cli import main
from paradec.tuner import tune_search
from paradec.tuning import preset_file

from helpers import APP

pytestmark = pytest.mark.usefixtures("one_thread")
CATS = ["code", "poem", "math"]


def test_every_tune_value_is_a_valid_setting():
    for m in catalog.METHODS.values():
        for p in m.params:
            for v in p.tune:
                p.check(v)
                assert type(v) is p.kind or (p.kind is float and type(v) is int), (m.name, p.name, v)


def test_schedule_candidates_and_front():
    assert tune_search.schedule(25, 26) == [(25, 2), (13, 4), (7, 8), (4, 16), (2, 26)]
    assert tune_search.schedule(5, 3) == [(5, 2), (3, 3)]
    got = tune_search.candidates("sps", 200, seed=1)
    assert next(iter(got)) == tune_search.DEFAULTS and got[tune_search.DEFAULTS] == {}
    assert all("threshold" not in v for v in got.values() if v and v["draft_length"] in ("fixed", "heuristic"))
    assert len(got) == 1 + 6 * (2 + 2 * 6)  # k x (two rules without a threshold + two with six)
    assert tune_search.candidates("sps", 5, seed=1) == tune_search.candidates("sps", 5, seed=1)
    pts = {"a": {"speedup": 1.2, "tau": 1.5}, "b": {"speedup": 1.0, "tau": 2.0}, "c": {"speedup": 0.9, "tau": 1.4}}
    assert tune_search.pareto(pts) == ["a", "b"]


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, tiny_dir):
    d = tmp_path_factory.mktemp("tune")
    rows = [{"question_id": i, "category": CATS[i % 3], "turns": [f"{CATS[i % 3]} {i}: a b a b c d a b"]}
            for i in range(12)]
    (d / "p.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    args = ["tune", "--methods", "lookahead", "--prompts", str(d / "p.jsonl"), "--model", str(tiny_dir),
            "--device", "cpu", "--max-new-tokens", "4", "--configs", "2", "--per-category", "1",
            "--heldout-per-category", "1", "--no-chat", "--state", str(d / "state.json"),
            "--preset-out", str(d / "preset.json"), "--json"]
    assert main(args) == 0
    return d, args


def test_state_and_preset(tuned, capfd):
    d, _ = tuned
    state = tune_search.load(d / "state.json")
    for m in ("lookahead",):
        mine = state["methods"][m]
        assert tune_search.DEFAULTS in mine["candidates"] and len(mine["candidates"]) == 3
        assert [r["prompts"] for r in mine["rungs"]] == [2, 3]
        final = mine["final"]
        assert final["finalists"][0] == tune_search.DEFAULTS and final["prompts"] == 3
        assert set(final["by_category"]) == set(CATS) and final["trace"]["method"] == m
        assert set(final["best_params"]) == set(tune_search.space(m))
        assert all(s["identical"] == s["runs"] for s in final["scores"].values())  # greedy: AR's tokens
    preset = preset_file.load(d / "preset.json")
    assert preset["methods"]["lookahead"] == state["methods"]["lookahead"]["final"]["best_params"]
    assert set(preset["categories"]) == set(CATS) and "state.json" in preset["source"]


def test_resume_decodes_nothing_again(tuned):
    d, args = tuned
    state = json.loads((d / "state.json").read_text())
    del state["methods"]["lookahead"]["final"]  # as if killed before the held-out comparison
    (d / "state.json").write_text(json.dumps(state))
    assert main(args) == 0
    again = tune_search.load(d / "state.json")
    assert again["methods"]["lookahead"]["runs"] == state["methods"]["lookahead"]["runs"]  # no search run redone
    assert "final" in again["methods"]["lookahead"]
    assert main([*args[:-5], "--configs", "3", *args[-5:]]) == 2  # other settings: refused, not mixed


def test_run_and_bench_load_the_preset(tuned, tiny_dir, capfd):
    d, _ = tuned
    preset_file.save(d / "mine.json", {"methods": {"lookahead": {"window": 2, "ngram": 2, "candidates": 1}}})
    trace = d / "t.json"
    assert main(["run", "--method", "lookahead", "--prompt", "a b a b", "--model", str(tiny_dir), "--no-chat",
                 "--max-new-tokens", "3", "--preset", str(d / "mine.json"), "--set", "ngram=3",
                 "--trace", str(trace)]) == 0
    params = json.loads(trace.read_text())["params"]
    assert (params["window"], params["ngram"], params["candidates"]) == (2, 3, 1)  # --set wins over the preset
    (d / "bad.json").write_text(json.dumps({"kind": "paradec-preset", "schema": 1, "methods": {"pld": {"k": 0}}}))
    capfd.readouterr()
    assert main(["run", "--method", "pld", "--prompt", "x", "--preset", str(d / "bad.json")]) == 2
    err = capfd.readouterr().err
    assert "k must be between 1 and 64" in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_tune_refuses_bad_input(capfd):
    assert main(["tune", "--methods", "ar", "--state", "/tmp/x.json"]) == 2
    assert "no settings to tune" in capfd.readouterr().err
    assert main(["tune", "--methods", "pld", "--eta", "1", "--state", "/tmp/x.json"]) == 2


def test_tune_page_without_results_says_how(monkeypatch, tmp_path):
    from ui import tune as tune_page

    monkeypatch.setattr(tune_page, "TUNE_DIR", tmp_path)  # AppTest runs the page in this process
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("views/tune.py").run()
    assert not at.exception and "python -m paradec tune" in at.info[0].value


def test_tune_page_shows_the_shipped_run():
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("views/tune.py").run()
    assert not at.exception and not at.error and at.get("plotly_chart")  # the front of the shipped run
