"""Batched decoding from the command line, on the tiny random model: `bench --batch` (by_batch in the results,
its table, its loader) and `run` with several prompts (one batch; each sequence's tokens are its run alone)."""
import json

import pytest
from test_cli import assert_one_line_error, cli

from paradec import bench_batch, bench_report
from paradec.cli import main
from paradec.run import MAX_BATCH
from paradec.traces.trace import Trace

from helpers import ROOT

# make test only: the command line's batches, end to end
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

ROWS = [{"prompt": "a b a b a b a b", "category": "copy"}, {"prompt": "one two one two one two", "category": "copy"},
        {"prompt": "hello there", "category": "chat"}]
PROMPTS = ["one two one two one", "x", "the cat sat on the mat, the cat"]


@pytest.fixture(scope="module")
def prompts(tmp_path_factory):
    path = tmp_path_factory.mktemp("prompts") / "p.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in ROWS), encoding="utf-8")
    return path


def test_bench_batch_records_every_method_at_every_size(capfd, tiny_dir, prompts, tmp_path):
    out = tmp_path / "batch.json"
    code = main(["bench", "--methods", "pld,sps", "--prompts", str(prompts), "--model", str(tiny_dir), "--device",
                 "cpu", "--draft", "self:1", "--max-new-tokens", "6", "--batch", "2,1", "--no-memory", "--out",
                 str(out)])
    printed, err = capfd.readouterr()
    assert code == 0, err
    report = bench_report.load(out)
    for name in ("ar", "pld", "sps"):
        by = report["methods"][name]["by_batch"]
        fields = set(bench_batch.FIELDS) | {"rows", "decode_tokens_per_s"}
        assert list(by) == ["1", "2"] and all(fields == set(m) for m in by.values()), name
        assert by["1"]["runs"] == 3 and by["2"]["runs"] == 4  # at B = 2: [0, 1] and [2, 0], the first again
        assert all(m["identical_runs"] == m["runs"] for m in by.values()), name  # greedy: AR's batch-1 tokens
        assert all(m["tokens_per_s"] > 0 and m["latency_s"] > 0 and m["tau"] >= 1.0 for m in by.values())
    assert all(m["speedup"] == 1.0 and m["tau"] == 1.0 for m in report["methods"]["ar"]["by_batch"].values())
    sps = report["methods"]["sps"]["by_batch"]["2"]
    assert sps["speedup"] == round(sps["tokens_per_s"] / report["methods"]["ar"]["by_batch"]["2"]["tokens_per_s"], 3)
    assert "by_batch" not in next(iter(report["categories"].values()))["ar"]
    assert "by batch size" in printed and "B=2" in printed and "latency (s)" in printed


@pytest.mark.parametrize("sizes, words", [("0", ["batch sizes"]), ("1,x", ["batch sizes"]), ("", ["batch sizes"]),
                                          (f"1,{MAX_BATCH + 1}", [str(MAX_BATCH)])])
def test_bench_batch_refuses_bad_sizes(capfd, prompts, sizes, words):
    code = main(["bench", "--methods", "pld", "--prompts", str(prompts), "--batch", sizes])
    out, err = capfd.readouterr()
    assert_one_line_error(code, out, err, *words)


def test_the_groups_cycle_the_prompts():
    assert bench_batch.groups(3, 2) == [[0, 1], [2, 0]]
    assert bench_batch.groups(3, 8) == [[0, 1, 2, 0, 1, 2, 0, 1]]
    assert bench_batch.groups(4, 2) == [[0, 1], [2, 3]]
    assert bench_batch.parse_sizes("16, 1,2,2", 64) == [1, 2, 16]


def test_the_loader_takes_old_files_and_refuses_a_bad_by_batch(tmp_path):
    old = bench_report.load(ROOT / "assets" / "bench" / "cpu-2core.json")  # written before bench --batch
    assert not any("by_batch" in m for m in old["methods"].values())
    assert bench_batch.lines(old) == []
    for bad in ({"one": {}}, {"2": {"tokens_per_s": 1.0}}, []):
        report = json.loads(json.dumps(old))
        report["methods"]["ar"]["by_batch"] = bad
        (tmp_path / "bad.json").write_text(json.dumps(report))
        with pytest.raises(bench_report.ResultsError, match="by_batch|batch size"):
            bench_report.load(tmp_path / "bad.json")


# ---------------------------------------------------------------- run with several prompts

def _run(capfd, tiny_dir, *args):
    return cli(capfd, "--method", "sps", "--model", tiny_dir, "--device", "cpu", "--draft", "self:1", "--set", "k=3",
               "--max-new-tokens", 9, *args)


def test_run_decodes_several_prompts_as_one_batch(capfd, tiny_dir, tmp_path):
    alone = []
    for prompt in PROMPTS:
        code, out, err = _run(capfd, tiny_dir, "--prompt", prompt, "--json")
        assert code == 0, err
        alone.append(json.loads(out)["token_ids"])
    many = [a for p in PROMPTS for a in ("--prompt", p)]
    code, out, err = _run(capfd, tiny_dir, *many, "--json", "--trace", tmp_path / "t.json")
    assert code == 0, err
    batch = json.loads(out)
    assert batch["batch"] == 3 and [s["token_ids"] for s in batch["sequences"]] == alone
    assert batch["wall_s"] == max(s["wall_s"] for s in batch["sequences"])
    assert batch["new_tokens"] == sum(len(a) for a in alone)
    for i, prompt in enumerate(PROMPTS, 1):
        trace = Trace.load(tmp_path / f"t-{i}.json")
        assert trace.prompt == prompt and trace.token_ids == alone[i - 1]
    assert not (tmp_path / "t.json").exists()
    code, out, err = _run(capfd, tiny_dir, *many)
    assert code == 0, err
    assert all(f"=== sequence {i}/3 ===" in out for i in (1, 2, 3)) and "[sps 2/3]" in err and "batch of 3" in err


@pytest.mark.parametrize("args, words", [
    (["--prompt", "hello", "--prompt", " "], ["prompt 2", "empty"]),
    (["--prompt", "a"] * (MAX_BATCH + 1), [f"at most {MAX_BATCH} prompts"]),
    (["--prompt", "a", "--prompt-file", "b"], ["not allowed"]),
])
def test_run_refuses_a_bad_batch_in_one_line(capfd, args, words):
    assert_one_line_error(*cli(capfd, "--method", "ar", *args), *words)
