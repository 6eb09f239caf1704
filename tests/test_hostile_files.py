"""Hostile files and paths for the command line: outputs that are devices or FIFOs (refused before
any work, never replaced), prompt, preset and tune state files of the wrong shape, weights folders holding a
FIFO, counts without a sane size, echoed values of 5,000 digits, a bad --host, stdout on a full device.
Each ends in one short line and exit 2, never a traceback, a hang or a replaced file.
Tiny random model; a regression that would hang fails after a few seconds instead (_within)."""
from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest
from test_cli import assert_one_line_error
from test_hostile_cli import WEIGHT_FILES, WHERE, _within

from paradec.cli import MAX_ERROR_CHARS, main
from paradec.traces import files

pytestmark = pytest.mark.usefixtures("one_thread")


def cli(capfd, *args) -> tuple[int, str, str]:
    code = _within(30, lambda: main([*map(str, args)]))
    out, err = capfd.readouterr()
    return code, out, err


@pytest.fixture
def prompts(tmp_path) -> Path:
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "a b a b"}\n{"question_id": 1, "prompt": "c d c d"}\n')
    return path


@pytest.fixture
def outputs(tmp_path) -> dict[str, Path]:
    """Paths an output must never replace: a FIFO, a symlink to a character device, a folder."""
    fifo, device = tmp_path / "fifo", tmp_path / "null"
    os.mkfifo(fifo)
    device.symlink_to(os.devnull)
    return {"fifo": fifo, "device": device, "folder": tmp_path / "folder"}


def assert_untouched(outputs: dict[str, Path]) -> None:
    assert stat.S_ISFIFO(os.stat(outputs["fifo"]).st_mode)
    assert outputs["device"].is_symlink() and stat.S_ISCHR(os.stat(outputs["device"]).st_mode)
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


# ---------------------------------------------------------------- outputs (item 2)

@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_write_atomic_never_replaces_what_is_not_a_regular_file(outputs, kind):
    outputs["folder"].mkdir()
    with pytest.raises(files.NotRegular):
        files.write_atomic(outputs[kind], "{}")
    assert_untouched(outputs)
    assert outputs["folder"].is_dir() and not any(outputs["folder"].parent.glob(".*.tmp"))


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_outputs_that_are_not_files_are_refused_before_any_work(capfd, tmp_path, prompts, outputs, kind):
    """--model names no model: a refusal that came after loading would say so instead."""
    outputs["folder"].mkdir()
    out, nothing = outputs[kind], tmp_path / "no-model"
    for args, what in [
        (["run", "--method", "pld", "--prompt", "hi", "--trace", out], "trace"),
        (["bench", "--methods", "pld", "--prompts", prompts, "--out", out], "results"),
        (["tune", "--methods", "pld", "--prompts", prompts, "--state", out], "state"),
        (["tune", "--methods", "pld", "--prompts", prompts, "--state", tmp_path / "s.json", "--preset-out", out],
         "preset"),
    ]:
        assert_one_line_error(*cli(capfd, *args, "--model", nothing), f"cannot write {what}")
    assert_untouched(outputs)
    assert not (tmp_path / "s.json").exists()


def test_results_whose_csv_would_replace_a_fifo_are_refused(capfd, tmp_path, prompts, outputs):
    os.mkfifo(tmp_path / "r.csv")
    assert_one_line_error(*cli(capfd, "bench", "--methods", "pld", "--prompts", prompts, "--out",
                               tmp_path / "r.json", "--model", tmp_path / "no-model"), "r.csv", "not a regular file")
    assert stat.S_ISFIFO(os.stat(tmp_path / "r.csv").st_mode) and not (tmp_path / "r.json").exists()


def test_json_onto_a_full_device_is_one_line(capfd, monkeypatch, tiny_dir):
    with open("/dev/full", "w") as full:  # stdout on the device, opened for writing: nothing replaces it
        monkeypatch.setattr(sys, "stdout", full)
        code, out, err = cli(capfd, "run", "--method", "pld", "--prompt", "a b a b", "--max-new-tokens", 2,
                             "--model", tiny_dir, "--json")
    assert_one_line_error(code, out, err, "standard output")


# ---------------------------------------------------------------- files of the wrong shape (item 3)

@pytest.mark.parametrize("line, words", [
    ('{"turns": 5}', "'turns'"), ('{"turns": {"a": 1}}', "'turns'"), ('{"turns": []}', "'turns'"),
    ("[" * 100_000 + "]" * 100_000, "not JSONL"), ('{"question_id": ' + "7" * 5000 + ', "prompt": "hi"}', "JSONL"),
    ('{"prompt": "hi", "category": ["x"]}', "category"), ('{"prompt": "hi", "id": [1]}', "'id'"),
    ('{"prompt": "hi", "id": "' + "x" * 5000 + '"}', "'id'"), ('{"prompt": "hi", "id": true}', "'id'"),
])
def test_prompt_rows_of_the_wrong_shape_are_one_line(capfd, tmp_path, line, words):
    (tmp_path / "p.jsonl").write_text(line + "\n")
    for command in (["bench", "--methods", "pld"], ["tune", "--methods", "pld", "--state", tmp_path / "s.json"]):
        code, out, err = cli(capfd, *command, "--prompts", tmp_path / "p.jsonl", "--model", tmp_path / "no-model")
        assert_one_line_error(code, out, err, words)
        assert len(err) < MAX_ERROR_CHARS + 40


@pytest.mark.parametrize("preset", [{"categories": [1]}, {"categories": {"code": [1]}}, {"methods": {"pld": [1]}},
                                    {"methods": {"pld": {"k": int("9" * 4000)}}}])
def test_presets_of_the_wrong_shape_are_one_line(capfd, tmp_path, prompts, preset):
    (tmp_path / "p.json").write_text(json.dumps({"kind": "paradec-preset", "schema": 1, "methods": {}, **preset}))
    for command in (["run", "--method", "pld", "--prompt", "hi"], ["bench", "--methods", "pld", "--prompts", prompts]):
        code, out, err = cli(capfd, *command, "--preset", tmp_path / "p.json", "--model", tmp_path / "no-model")
        assert_one_line_error(code, out, err, "preset")
        assert len(err) < MAX_ERROR_CHARS + 40


RECORD = {"tokens": 4, "wall_s": 0.1, "forwards": 2, "ids": "ab"}


@pytest.mark.parametrize("change", [
    lambda s: s.pop("fingerprint"), lambda s: s.update(methods=[1]), lambda s: s.update(methods={"pld": 1}),
    lambda s: s["methods"].update(pld={"runs": {"defaults": {"0": {**RECORD, "tokens": "4"}}}, "effective": {}}),
    lambda s: s["methods"].update(pld={"runs": {}, "effective": {}, "final": {"best": "defaults"}}),
    lambda s: s.update(ar={"search:0": {**RECORD, "wall_s": True}}), lambda s: s["settings"].pop("model"),
])
def test_tune_states_of_the_wrong_shape_are_one_line(capfd, tmp_path, prompts, change):
    state = {"kind": "paradec-tune", "schema": 1, "fingerprint": "x", "settings": {"model": None},
             "created": "2025-01-01 00:00", "machine": {}, "ar": {"search:0": RECORD},
             "methods": {"pld": {"runs": {"defaults": {"0": RECORD}}, "effective": {"defaults": {}}}}}
    change(state)
    (tmp_path / "s.json").write_text(json.dumps(state))
    code, out, err = cli(capfd, "tune", "--methods", "pld", "--prompts", prompts, "--state", tmp_path / "s.json",
                         "--model", tmp_path / "no-model")
    assert_one_line_error(code, out, err, "not a tune state")


# ---------------------------------------------------------------- FIFO weights and counts (item 4)

@pytest.fixture(scope="module")
def fifo_weights(tmp_path_factory, tiny_dir) -> Path:
    """A model folder (the tiny model's config and tokenizer) whose every weights file is a FIFO."""
    folder = tmp_path_factory.mktemp("fifo-weights")
    for f in Path(tiny_dir).iterdir():
        if f.suffix != ".safetensors":
            shutil.copy(f, folder / f.name)
    for name in set(WEIGHT_FILES):
        os.mkfifo(folder / name)
    return folder


@pytest.mark.parametrize("where", WHERE)
def test_weights_folders_holding_a_fifo_are_refused_at_once(capfd, tiny_dir, fifo_weights, where):
    code, out, err = cli(capfd, "run", "--prompt", "hi", "--max-new-tokens", 2, "--model", tiny_dir,
                         *WHERE[where](fifo_weights))
    assert_one_line_error(code, out, err)


@pytest.mark.parametrize("setting, words", [("head", "not a regular file"), ("adapter", "no adapter")])
def test_a_fifo_named_as_weights_is_refused_at_once(capfd, tiny_dir, fifo_weights, setting, words):
    method = {"head": ["--method", "eagle"], "adapter": ["--method", "early_exit", "--set", "exit_layer=1"]}[setting]
    path = fifo_weights / f"{setting}.safetensors"
    code, out, err = cli(capfd, "run", "--prompt", "hi", "--model", tiny_dir, *method, "--set", f"{setting}={path}")
    assert_one_line_error(code, out, err, words)


@pytest.mark.parametrize("args, words", [
    (["bench", "--methods", "pld", "--repeats", "1000000000000"], "--repeats"),
    (["bench", "--methods", "pld", "--per-category", "9" * 5000], "--per-category"),
    (["bench", "--methods", "pld", "--limit", "-" + "9" * 5000], "--limit"),
    (["tune", "--methods", "pld", "--configs", str(10**12), "--state", "s.json"], "--configs"),
    (["tune", "--methods", "pld", "--repeats", str(10**12), "--state", "s.json"], "--repeats"),
    (["serve", "--queue", str(10**12)], "--queue"), (["serve", "--replicas", str(10**12)], "--replicas"),
    (["run", "--method", "pld", "--prompt", "hi", "--max-new-tokens", "9" * 5000], "--max-new-tokens"),
    (["run", "--method", "pld", "--prompt", "hi", "--seed", "9" * 5000], "--seed"),
])
def test_counts_have_caps_and_short_messages(capfd, args, words):
    code, out, err = cli(capfd, *args)
    assert_one_line_error(code, out, err, words)
    assert len(err) < MAX_ERROR_CHARS + 40


# ---------------------------------------------------------------- smaller (item 9)

@pytest.mark.parametrize("pair", ["k=" + "9" * 5000, "k" * 5000 + "=1", "x" * 5000])
def test_set_values_are_echoed_short(capfd, tmp_path, pair):
    code, out, err = cli(capfd, "run", "--method", "pld", "--prompt", "hi", "--set", pair, "--model", tmp_path / "no")
    assert_one_line_error(code, out, err)
    assert len(err) < MAX_ERROR_CHARS + 40


@pytest.mark.parametrize("host", ["999.999.999.999", "192.0.2.1", "not a host", "", "x" * 5000])
def test_serve_on_a_bad_host_is_one_line(capfd, tmp_path, host):
    """--model names no model: a host accepted would fail on loading it (another message), not serve."""
    code, out, err = cli(capfd, "serve", "--host", host, "--port", 0, "--model", tmp_path / "no-model")
    assert_one_line_error(code, out, err, "cannot serve on")


BAD_URLS = ["http://127.0.0.1:99999", "http://[::1", "http://h:abc", "http://h:-1", "http://h: 80", "http://:80",
            "http://h:", "ftp://h:8000", "gpu-box:8000", "http://h\x1b]0;owned\x07"]


@pytest.mark.parametrize("url", BAD_URLS)
def test_a_malformed_engine_address_is_one_line_before_any_work(capfd, tmp_path, prompts, url):
    """Parsed where it is given (bench --peers, serve --engine, a peer's baseline), not at its first use;
    --model names no model: an address accepted would fail on loading it instead."""
    for args, flag in [(["bench", "--methods", "pld", "--prompts", prompts, "--peers", f"vllm={url}"], "--peers"),
                       (["bench", "--methods", "pld", "--prompts", prompts, "--peers",
                         f"sglang=http://h:8000,baseline={url}"], "baseline"),
                       (["serve", "--port", 0, "--engine", f"vllm={url}"], "--engine")]:
        code, out, err = cli(capfd, *args, "--model", tmp_path / "no-model")
        assert_one_line_error(code, out, err, flag, "is not an http(s) URL")
        assert "\x1b" not in err


@pytest.mark.parametrize("address", ["h:99999", "[::1", "h", "http://h:1", "ray://h", "local", "h:6379/x"])
def test_a_malformed_ray_address_is_one_line(capfd, address):
    assert_one_line_error(*cli(capfd, "serve", "--ray-address", address), "--ray-address", "is not auto")


def test_a_prompt_files_escape_sequences_reach_the_terminal_escaped(capfd, tmp_path, tiny_dir):
    """bench's progress line names each prompt's category (stderr); its table goes to stdout, shown escaped on a
    terminal (paradec.traces.files.print_out)."""
    (tmp_path / "p.jsonl").write_text(json.dumps({"prompt": "a b a b", "category": "\x1b]0;owned\x07\x1b[2J"}))
    code, out, err = cli(capfd, "bench", "--methods", "pld", "--prompts", tmp_path / "p.jsonl", "--model", tiny_dir,
                         "--no-memory", "--max-new-tokens", 2, "--no-chat")
    assert code == 0, err
    assert "\x1b" not in err and "\\x1b]0;owned\\x07" in err


@pytest.mark.parametrize("command", ["bench", "tune"])
@pytest.mark.parametrize("names", ["", " , "])
def test_an_empty_method_list_is_refused(capfd, tmp_path, prompts, command, names):
    own = ["--state", tmp_path / "s.json"] if command == "tune" else []
    code, out, err = cli(capfd, command, "--methods", names, "--prompts", prompts, "--model", tmp_path / "no", *own)
    assert_one_line_error(code, out, err, "names no method")


@pytest.mark.parametrize("command", ["bench", "tune"])
def test_a_prompt_too_long_for_the_model_is_refused_before_decoding(capfd, tmp_path, tiny_dir, command):
    rows = [{"prompt": "a b a b", "category": "x"}, {"prompt": "a b c " * 400, "category": "x", "id": "long"},
            {"question_id": 1, "prompt": "a b a b", "category": "x"}]
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    own = ["--state", tmp_path / "s.json", "--configs", 1] if command == "tune" else ["--no-memory"]
    code, out, err = cli(capfd, command, "--methods", "pld", "--prompts", tmp_path / "p.jsonl", "--model", tiny_dir,
                         "--device", "cpu", "--no-chat", "--max-new-tokens", 4, *own)
    assert_one_line_error(code, out, err, "prompt long", "context")
    assert not (tmp_path / "s.json").exists()  # no run was decoded, none saved
