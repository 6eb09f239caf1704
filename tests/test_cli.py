"""python -m paradec run: bad input exits with status 2 and exactly one line on stderr
(starting "paradec: error:"), never a traceback; a good run prints its summary as JSON
and writes a loadable trace.

Mostly in-process (paradec.cli.main, output captured at the file-descriptor level so
that library logging would be seen too); two subprocess runs check the real exit status.
Models are a tiny random Llama saved with the embedded tokenizer in a temporary folder."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from paradec.cli import main
from paradec.run import MAX_NEW_TOKENS, MAX_PROMPT_CHARS
from paradec.traces.trace import Trace
from paradec.tuning import presets

from helpers import tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")

ROOT = Path(__file__).resolve().parent.parent
SUMMARY_KEYS = {
    "method", "params", "new_tokens", "token_ids", "text", "target_forwards", "draft_forwards",
    "tau", "acceptance", "drafted_accepted", "wall_s", "tokens_per_s",
}


def cli(capfd, *args) -> tuple[int, str, str]:
    code = main(["run", *map(str, args)])
    out, err = capfd.readouterr()
    return code, out, err


def assert_one_line_error(code, out, err, *words):
    """Exit 2 and one error line (after what the command said it would write, when it got that far)."""
    assert code == 2, (out, err)
    lines = [line for line in err.splitlines() if not re.match(r"(run|bench|tune): will write ", line)]
    assert len(lines) == 1, err
    assert lines[0].startswith("paradec: error: "), err
    assert "Traceback" not in err and "Traceback" not in out
    for w in words:
        assert w.lower() in lines[0].lower(), lines[0]


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory, tiny_dir, tokenizer):
    """Drafts that cannot pair with the tiny target: another tokenizer, another vocabulary size."""
    base = tmp_path_factory.mktemp("drafts")
    other_tok = type(tokenizer).from_pretrained(tiny_dir)
    other_tok.add_tokens(["<paradec-test-only>"])
    other = base / "other-tokenizer"
    tiny_model(vocab_size=len(other_tok), seed=5).save_pretrained(other)
    other_tok.save_pretrained(other)
    wider = base / "wider-vocab"
    tiny_model(vocab_size=len(tokenizer) + 64, seed=6).save_pretrained(wider)
    tokenizer.save_pretrained(wider)
    empty = base / "empty"
    empty.mkdir()
    bad_config = base / "bad-config"
    bad_config.mkdir()
    (bad_config / "config.json").write_text("{not json")
    tokenizer.save_pretrained(bad_config)
    return {"other-tokenizer": other, "wider-vocab": wider, "empty": empty, "bad-config": bad_config,
            "a-file": tiny_dir / "config.json"}


# ---------------------------------------------------------------- errors before any model loads

BASE = ["--method", "ar", "--prompt", "hello"]


@pytest.mark.parametrize(
    "args, words",
    [
        (["--method", "ar", "--prompt", ""], ["empty"]),
        (["--method", "ar", "--prompt", "   \n\t "], ["empty"]),
        (["--method", "ar", "--prompt", "x" * (MAX_PROMPT_CHARS + 1)], ["too long"]),
        (BASE + ["--max-new-tokens", "0"], ["max new tokens"]),
        (BASE + ["--max-new-tokens", "-3"], ["max new tokens"]),
        (BASE + ["--max-new-tokens", str(MAX_NEW_TOKENS + 1)], [str(MAX_NEW_TOKENS)]),
        (BASE + ["--max-new-tokens", "many"], ["max-new-tokens"]),
        (["--method", "nope", "--prompt", "hello"], ["unknown method", "nope"]),
        (["--method", "pld", "--prompt", "hello", "--set", "window=3"], ["unknown parameter", "window"]),
        (["--method", "ar", "--prompt", "hello", "--set", "k=3"], ["unknown parameter"]),
        (["--method", "pld", "--prompt", "hello", "--set", "k=many"], ["k", "int"]),
        (["--method", "pld", "--prompt", "hello", "--set", "k=2.5"], ["k", "int"]),
        (["--method", "sps", "--prompt", "hello", "--set", "threshold=high", "--draft", "self:1"],
         ["threshold", "float"]),
        (["--method", "pld", "--prompt", "hello", "--set", "k"], ["KEY=VALUE"]),
        # only the embedded model has a default draft
        (["--method", "sps", "--prompt", "hello", "--model", "some/model"], ["draft"]),
        (BASE + ["--temperature", "-1"], ["temperature"]),
        (BASE + ["--top-p", "0"], ["top-p"]),
        (BASE + ["--top-k", "-2"], ["top-k"]),
        (BASE + ["--seed", str(2**70)], ["seed"]),
        (BASE + ["--dtype", "float8"], ["dtype"]),
        (BASE + ["--device", "toaster"], ["device"]),
        (["--prompt", "hello"], ["--method"]),
        (["--method", "ar"], ["--prompt"]),
        (["--method", "ar", "--prompt", "a", "--prompt-file", "b"], ["not allowed"]),
        (BASE + ["--bogus"], ["--bogus"]),
    ],
)
def test_input_errors(capfd, args, words):
    assert_one_line_error(*cli(capfd, *args), *words)


def test_unavailable_device(capfd):
    assert_one_line_error(*cli(capfd, *BASE, "--device", "cuda:99"), "cuda:99")  # no machine has a hundredth GPU


def test_no_command(capfd):
    code = main([])
    out, err = capfd.readouterr()
    assert_one_line_error(code, out, err)


def test_prompt_file_errors(capfd, tmp_path):
    assert_one_line_error(*cli(capfd, "--method", "ar", "--prompt-file", tmp_path / "missing.txt"), "prompt file")
    assert_one_line_error(*cli(capfd, "--method", "ar", "--prompt-file", tmp_path), "prompt file")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    assert_one_line_error(*cli(capfd, "--method", "ar", "--prompt-file", latin1), "prompt file")
    blank = tmp_path / "blank.txt"
    blank.write_text("\n\n  \n")
    assert_one_line_error(*cli(capfd, "--method", "ar", "--prompt-file", blank), "empty")
    huge = tmp_path / "huge.txt"
    huge.write_text("word " * (MAX_PROMPT_CHARS // 5 + 1))
    assert_one_line_error(*cli(capfd, "--method", "ar", "--prompt-file", huge), "too long")


def test_endless_prompt_file(capfd):
    """A device never ends: refused unread, as anything that is not a regular file."""
    assert_one_line_error(*cli(capfd, "--method", "ar", "--prompt-file", "/dev/zero"), "not a regular file")


# ---------------------------------------------------------------- errors that need a model

@pytest.mark.parametrize("which", ["empty", "bad-config", "a-file", "missing"])
def test_model_that_cannot_load(capfd, models_dir, tmp_path, which):
    path = models_dir.get(which, tmp_path / "no-such-model")
    assert_one_line_error(*cli(capfd, *BASE, "--model", path), "cannot load model")


def test_draft_that_cannot_load(capfd, tiny_dir, models_dir):
    assert_one_line_error(*cli(capfd, "--method", "sps", "--prompt", "hi", "--model", tiny_dir,
                               "--draft", models_dir["empty"]),
                          "cannot load model")


def test_prompt_longer_than_the_context(capfd, tiny_dir):
    # the tiny model's context is 512 positions
    assert_one_line_error(*cli(capfd, "--method", "ar", "--prompt", "word " * 600, "--model", tiny_dir), "context")
    assert_one_line_error(*cli(capfd, "--method", "ar", "--prompt", "word " * 400, "--model", tiny_dir,
                               "--max-new-tokens", 200), "context")


@pytest.mark.parametrize("which", ["other-tokenizer", "wider-vocab"])
def test_draft_with_another_tokenizer(capfd, tiny_dir, models_dir, which):
    assert_one_line_error(*cli(capfd, "--method", "sps", "--prompt", "hi", "--model", tiny_dir,
                               "--draft", models_dir[which]),
                          "tokenizer")


@pytest.mark.parametrize("spec", ["self:x", "self:", "self:0", "self:2", "self:-1"])
def test_bad_self_draft(capfd, tiny_dir, spec):
    assert_one_line_error(*cli(capfd, "--method", "sps", "--prompt", "hi", "--model", tiny_dir, "--draft", spec),
                          "self:")


@pytest.mark.parametrize(
    "method, pairs",
    [("pld", ["k=0"]), ("pld", ["k=-1"]), ("pld", ["ngram_min=3", "ngram_max=2"]), ("pld", ["ngram_min=0"]),
     ("sps", ["k=0"]), ("sps", ["k=99"]), ("sps", ["draft_length=sometimes"]), ("sps", ["threshold=1.5"])],
)
def test_parameter_out_of_range(capfd, tiny_dir, method, pairs):
    sets = [a for p in pairs for a in ("--set", p)]
    assert_one_line_error(*cli(capfd, "--method", method, "--prompt", "hi", "--model", tiny_dir,
                               "--draft", "self:1", *sets),
                          method)


def test_unwritable_trace(capfd, tiny_dir, tmp_path):
    assert_one_line_error(*cli(capfd, *BASE, "--model", tiny_dir, "--max-new-tokens", 2,
                               "--trace", tmp_path / "no" / "t.json"),
                          "trace")


# ---------------------------------------------------------------- good runs

def test_run_json_and_trace(capfd, tiny_dir, tmp_path):
    path = tmp_path / "sps.json"
    code, out, err = cli(capfd, "--method", "sps", "--prompt", "one two one two one", "--model", tiny_dir,
                         "--device", "cpu", "--draft", "self:1", "--set", "k=3",
                         "--max-new-tokens", 9, "--json", "--trace", path)
    assert code == 0, err
    summary = json.loads(out)
    assert set(summary) == SUMMARY_KEYS
    assert summary["method"] == "sps"
    tuned = json.loads((presets.TUNED / "cpu.json").read_text())["methods"].get("sps", {})  # the CPU preset's
    assert summary["params"] == {"draft_length": "fixed", "threshold": 0.4, **tuned, "k": 3}  # --set wins
    assert summary["new_tokens"] == len(summary["token_ids"]) <= 9
    assert summary["tau"] == round(summary["new_tokens"] / summary["target_forwards"], 4)
    assert summary["draft_forwards"] > 0
    trace = Trace.load(path)
    assert trace.token_ids == summary["token_ids"]
    assert trace.method == "sps" and trace.params == summary["params"]
    assert trace.draft_model and "1 layer" in trace.draft_model
    # greedy: the same tokens as plain autoregressive decoding
    code, out, _ = cli(capfd, "--method", "ar", "--prompt", "one two one two one", "--model", tiny_dir,
                       "--device", "cpu", "--max-new-tokens", 9, "--json")
    assert code == 0
    ar = json.loads(out)
    assert ar["token_ids"] == summary["token_ids"]
    assert ar["tau"] == 1.0 and ar["acceptance"] is None and ar["draft_forwards"] == 0


def test_run_text_output(capfd, tiny_dir, tmp_path):
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("a b c a b c a b", encoding="utf-8")
    code, out, err = cli(capfd, "--method", "pld", "--prompt-file", prompt, "--model", tiny_dir, "--max-new-tokens", 6,
                         "--temperature", 0.8, "--top-k", 20, "--seed", 3, "--no-chat")
    assert code == 0, err
    assert "[pld]" in err and "tau" in err and "Traceback" not in err


def _subprocess(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "paradec", "run", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_real_exit_status_of_an_error():
    p = _subprocess("--method", "ar", "--prompt", "hi", "--max-new-tokens", "0")
    assert_one_line_error(p.returncode, p.stdout, p.stderr, "max new tokens")
    assert p.stdout == ""


@pytest.mark.slow
def test_real_exit_status_of_a_run(tiny_dir):
    p = _subprocess("--method", "pld", "--prompt", "x y x y x", "--model", tiny_dir, "--max-new-tokens", "4", "--json")
    assert p.returncode == 0, p.stderr
    assert set(json.loads(p.stdout)) == SUMMARY_KEYS
