"""Hostile input to `python -m paradec run` and the files it touches: weights that are
random bytes or the wrong kind of file, sampling settings that would compute NaN, devices this
machine lacks, FIFOs and devices as input files, a full disk under a trace being saved, an empty
--trace, a cached model cut short, conversions killed half way, costs that grow without bound.
Each ends in one line and exit 2 (or is repaired and said so), never a traceback or a hang.
Tiny random model with the embedded tokenizer, one thread."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from test_cli import assert_one_line_error, cli
from test_safety import _cache, fake_gguf  # noqa: F401 (fixture: the GGUF conversion on a tiny model)

from paradec import models
from paradec.core.sampling import Sampler
from paradec.drafters import medusa_heads
from paradec.drafters.pld import PromptLookup
from paradec.models import embedded
from paradec.traces import files
from paradec.traces.trace import Trace, TraceError

from helpers import build

# make test only: real processes, signals and files for every hostile case
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

ROOT = Path(__file__).resolve().parents[1]
SECRET = "secret_tensor_name_4242"
WEIGHT_FILES = ("model.safetensors", "head.safetensors", "adapter.safetensors", medusa_heads.OURS)


@pytest.fixture(scope="module")
def bad(tmp_path_factory, tiny_dir):
    """Weights that are not weights, in every form a loader reads: path -> what it is."""
    base = tmp_path_factory.mktemp("bad-weights")
    (base / "random.bin").write_bytes(os.urandom(4096))
    random_dir, other_dir, other_model = base / "random-dir", base / "other-dir", base / "other-model"
    for d in (random_dir, other_dir, other_model):
        d.mkdir()
    for name in WEIGHT_FILES:
        (random_dir / name).write_bytes(os.urandom(4096))
        save_file({SECRET: torch.zeros(2)}, str(other_dir / name))
    (random_dir / "config.json").write_bytes(os.urandom(256))
    (other_dir / "config.json").write_text(json.dumps({SECRET: 1}))
    for f in Path(tiny_dir).iterdir():  # a real model folder whose weights file holds other tensors
        if f.suffix == ".json" or f.name.endswith(".model"):
            (other_model / f.name).write_bytes(f.read_bytes())
    save_file({SECRET: torch.zeros(2)}, str(other_model / "model.safetensors"))
    return {"random bytes": base / "random.bin", "folder of random bytes": random_dir,
            "other safetensors": other_dir / "model.safetensors", "folder of other safetensors": other_dir,
            "model folder with other weights": other_model, "missing": base / "missing"}


KINDS = ["random bytes", "folder of random bytes", "other safetensors", "folder of other safetensors",
         "model folder with other weights", "missing"]
WHERE = {  # what names weights -> the arguments that pass it
    "medusa heads": lambda p: ["--method", "medusa", "--set", f"heads={p}"],
    "eagle head": lambda p: ["--method", "eagle", "--set", f"head={p}"],
    "eagle3 head": lambda p: ["--method", "eagle3", "--set", f"head={p}"],
    "early_exit adapter": lambda p: ["--method", "early_exit", "--set", "exit_layer=1", "--set", f"adapter={p}"],
    "cllm adapter": lambda p: ["--method", "cllm", "--set", f"adapter={p}"],
    "sps draft": lambda p: ["--method", "sps", "--draft", p],
    "sps trained draft": lambda p: ["--method", "sps", "--draft", f"trained:{p}"],
    "target model": lambda p: ["--method", "ar", "--model", p],
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("where", WHERE)
def test_weights_that_are_not_weights_are_one_line(capfd, tiny_dir, bad, where, kind):
    args = ["--prompt", "hi", "--max-new-tokens", 2, "--model", tiny_dir, *WHERE[where](bad[kind])]
    code, out, err = cli(capfd, *args)
    assert_one_line_error(code, out, err)
    assert SECRET not in err


@pytest.mark.parametrize("args, words", [
    (["--temperature", "1e-40"], "temperature"), (["--temperature", "5e-324"], "temperature"),
    (["--temperature", "nan"], "temperature"), (["--temperature", "inf"], "temperature"),
    (["--temperature", "1", "--top-p", "1e-300"], "top-p"), (["--temperature", "1", "--top-p", "nan"], "top-p"),
    (["--device", "meta"], "unknown device"), (["--device", "xpu"], "unknown device"),
    (["--device", "cuda:99"], "device"), (["--device", "cpu:3"], "device"), (["--device", "cpu;rm"], "device"),
    (["--trace", ""], "--trace"), (["--trace", "   "], "--trace"),
    (["--set", "k=100000"], "k must be between"), (["--set", "ngram_max=4000"], "ngram_max"),
])
def test_settings_that_would_misbehave_are_refused(capfd, tiny_dir, args, words):
    assert_one_line_error(*cli(capfd, "--method", "pld", "--prompt", "hi", "--model", tiny_dir, *args), words)


def test_the_smallest_sampling_settings_allowed_stay_finite(capfd, tiny_dir):
    code, out, err = cli(capfd, "--method", "pld", "--prompt", "a b a b a", "--model", tiny_dir, "--max-new-tokens", 6,
                         "--temperature", "0.01", "--top-p", "0.001", "--json")
    assert code == 0, err
    probs = Sampler(0.01, 0, 0.001).probs(torch.randn(1000) * 30)
    assert torch.isfinite(probs).all() and abs(float(probs.sum()) - 1) < 1e-5


@pytest.mark.serial  # on a clock: run alone, not beside other tests
def test_prompt_lookup_stays_cheap_at_its_caps():
    """ngram_max = 4,000 took 27 s a step at 4,000 tokens of context; at the caps a step is milliseconds."""
    ctx = [7] * 3000 + [1, 2, 3] + [7] * 996 + [9]  # long runs of one token: the slowest kind of search
    drafter = build(PromptLookup, k=64, ngram_max=16, ngram_min=1)
    t0 = time.perf_counter()
    drafter.propose(ctx, Sampler(), None)
    assert time.perf_counter() - t0 < 0.5


# ---------------------------------------------------------------- files that are not files

def _within(seconds: float, fn):
    """fn() in a thread; fails instead of hanging the suite when it blocks."""
    got = []

    def call():
        try:
            got.append((fn(), None))
        except Exception as e:  # handed to the test's thread
            got.append((None, e))

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(seconds)
    assert got, f"blocked for more than {seconds} s"
    if got[0][1] is not None:
        raise got[0][1]
    return got[0][0]


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


def test_a_fifo_as_prompt_file_is_refused_at_once(capfd, fifo):
    code = _within(10, lambda: cli(capfd, "--method", "ar", "--prompt-file", fifo))
    assert_one_line_error(*code, "not a regular file")


@pytest.mark.parametrize("what", ["fifo", "folder", "device"])
def test_a_trace_that_is_not_a_file_is_refused_at_once(fifo, tmp_path, what):
    path = {"fifo": fifo, "folder": tmp_path, "device": Path("/dev/zero")}[what]
    with pytest.raises(TraceError, match="not a regular file"):
        _within(10, lambda: Trace.load(path))


def test_a_fifo_as_bench_prompts_is_refused_at_once(capfd, fifo):
    from paradec.cli import main

    code = _within(10, lambda: main(["bench", "--methods", "pld", "--prompts", str(fifo)]))
    assert_one_line_error(code, *capfd.readouterr(), "not a regular file")


def test_a_folder_as_prompt_file_is_refused(capfd, tmp_path):
    assert_one_line_error(*cli(capfd, "--method", "ar", "--prompt-file", tmp_path), "not a regular file")


SAVE_UNDER_A_FULL_DISK = """
import resource, sys
from paradec.traces.trace import Trace
trace = Trace.load(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (8192, resource.RLIM_INFINITY))  # writes past 8 KB fail (EFBIG)
try:
    trace.save(sys.argv[2])
except OSError as e:
    print("refused", e.errno)
"""


def test_a_trace_saved_onto_a_full_disk_leaves_the_old_file_whole(tmp_path):
    good = tmp_path / "good.json"
    big = ROOT / "assets" / "traces" / "sps-sampled.json"
    assert big.stat().st_size > 8192
    Trace.load(ROOT / "assets" / "traces" / "ar-greedy.json").save(good)
    before = good.read_bytes()
    r = subprocess.run([sys.executable, "-c", SAVE_UNDER_A_FULL_DISK, str(big), str(good)], cwd=ROOT,
                       capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.stdout.startswith("refused"), r.stdout + r.stderr
    assert good.read_bytes() == before and Trace.load(good).steps  # whole, and still a trace
    assert [p.name for p in tmp_path.iterdir()] == ["good.json"]  # no temporary file left


def test_an_atomic_write_that_cannot_start_leaves_nothing(tmp_path):
    with pytest.raises(OSError):
        files.write_atomic(tmp_path / "missing-dir" / "t.json", "{}")
    with pytest.raises(OSError):
        files.write_atomic(tmp_path, "{}")  # a folder: it would be replaced by a file
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- the converted model's cache

def test_a_truncated_cached_model_is_rebuilt_and_said_so(fake_gguf, caplog):
    calls, _ = fake_gguf
    path = models.embedded_path()
    weights = path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])  # marked complete, cut short
    with caplog.at_level(logging.WARNING, logger="paradec.models.embedded"):
        assert models.embedded_path() == path
    assert len(calls) == 2 and embedded._whole(weights)
    assert any("damaged" in r.getMessage() and "rebuilding" in r.getMessage() for r in caplog.records)
    for junk in (b"", b"\xff" * 8, b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}"):
        weights.write_bytes(junk)
        assert not embedded._whole(weights)


def test_stale_conversion_folders_are_removed(fake_gguf):
    models.embedded_path()
    stale, fresh = _cache().parent / ".convert-killed", _cache().parent / ".convert-running"
    for d in (stale, fresh):
        d.mkdir()
        (d / "model.safetensors").write_bytes(b"\0" * 1000)
    old = time.time() - embedded.STALE_S - 60
    os.utime(stale, (old, old))
    models.embedded_path()
    assert not stale.exists() and fresh.exists()  # another process may be converting into the fresh one
