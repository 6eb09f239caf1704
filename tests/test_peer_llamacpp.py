"""bench --peers llamacpp: the worker protocol with a stand-in worker (tests/stand_in_peer.py: no llama.cpp),
its hostile replies, a crash of the worker as one line in the results, the missing package as one line before
any work, and the rows in the report, its table and its files. The real peer: test_the_real_peer (marker
`peers`, deselected unless asked for: `pytest -m peers tests/test_peer_llamacpp.py` after
scripts/install_peers.sh; it fails where llama-cpp-python is missing)."""
import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from paradec import bench_report
from paradec.bench import Options, bench, variants
from paradec.cli import main
from paradec.peers import llamacpp
from paradec.peers.pipe import MAX_REPLY, PeerError, Pipe
from paradec.runner import Runner

ROOT = Path(__file__).resolve().parents[1]
STAND_IN = str(Path(__file__).with_name("stand_in_peer.py"))
ROWS = [{"id": 1, "category": "copy", "prompt": "a b a b a b"}, {"id": 2, "category": "chat", "prompt": "hi"},
        {"id": 3, "category": "chat", "prompt": "name three rivers"}]


def stand_in(behaviour: str, after: int = 0) -> list[str]:
    return [sys.executable, STAND_IN, behaviour, str(after)]


def chat_ids(tokenizer, prompt: str) -> list[int]:
    return list(tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                              return_dict=True)["input_ids"])


def started(tokenizer, behaviour: str, after: int = 0, max_new_tokens: int = 6) -> llamacpp.LlamaCpp:
    """A peer over the stand-in, started (loaded, warmed up on the first row) as bench starts it."""
    peer = llamacpp.LlamaCpp(2, command=stand_in(behaviour, after), path=Path("model.gguf"))
    target = SimpleNamespace(tokenizer=tokenizer, model=SimpleNamespace(generation_config=None))
    peer.start(target, ROWS, Options(max_new_tokens=max_new_tokens).sampling())
    return peer


# ---------------------------------------------------------------- the protocol

def test_a_good_worker_gives_both_rows_of_each_prompt(tokenizer):
    peer = started(tokenizer, "good")
    try:
        got = peer.run(ROWS[2])
    finally:
        peer.close()
    assert list(got) == ["llamacpp", "llamacpp_pld"] and peer.failure is None
    ar = got["llamacpp"]
    assert ar["tokens"] == [100, 101, 102, 103, 104, 105] and ar["wall_s"] == 0.06 and ar["first_s"] == 0.005
    assert ar["prompt_ids"] == chat_ids(tokenizer, "name three rivers")  # the ids paradec's methods decode from
    assert got["llamacpp_pld"]["reference"] == "llamacpp" and "reference" not in ar
    assert peer.info["library"] == "stand-in 0.0 [31m" and peer.info["threads"] == 2  # the escape made printable
    assert peer.info["n_ctx"] % 256 == 0 and peer.info["n_ctx"] >= len(ar["prompt_ids"]) + 6
    assert peer.pipe is None  # closed


HOSTILE = [("crash", "died of SIGILL: ggml: illegal instruction"), ("exit", "exited with code 3: worker: out of luck"),
           ("flood", f"more than {MAX_REPLY} bytes"), ("garbage", "not JSON"), ("nan", "not JSON"),
           ("list", "not an object"), ("twice", "more than once"), ("refuse", "failed: no way"),
           ("bad_tokens", "bad tokens"), ("past_eos", "past an end-of-sequence"), ("slow_first", "bad times")]


@pytest.mark.parametrize("behaviour, words", HOSTILE)
def test_a_hostile_worker_is_one_line_and_the_peer_is_out(tokenizer, behaviour, words):
    peer = started(tokenizer, behaviour, after=3)  # the warm-up's two runs and the first prompt's AR go well
    assert peer.failure is None
    assert peer.run(ROWS[1]) == {}  # its AR was answered, its prompt lookup not: neither row keeps the prompt
    assert words in peer.failure and peer.failure.startswith("on prompt 2: the llama.cpp worker")
    assert len(peer.failure.splitlines()) == 1 and len(peer.failure) <= 300
    assert peer.run(ROWS[2]) == {} and peer.pipe is None  # out for the rest of the run, its process ended


def test_a_worker_that_hangs_is_killed_at_the_deadline():
    pipe = Pipe(stand_in("hang"), "the stand-in")
    pipe.ask({"op": "load"}, 10)
    with pytest.raises(PeerError, match="the stand-in gave no reply in 1 s"):
        pipe.ask({"op": "generate", "mode": "ar", "prompt_ids": [1], "max_new_tokens": 2, "stop_ids": [0]}, 1)
    assert pipe.proc.returncode is not None  # killed, not left sleeping


def test_a_failure_at_start_is_recorded_not_raised(tokenizer):
    peer = started(tokenizer, "crash")  # dies in the warm-up
    assert peer.failure.startswith("at its start: the llama.cpp worker died of SIGILL") and peer.run(ROWS[1]) == {}


# ---------------------------------------------------------------- the install script and the command line

@pytest.mark.parametrize("cpu, on, off", [
    ("fpu avx avx2 fma f16c bmi2", {"AVX2", "FMA", "F16C"}, {"AVX512", "AVX512_VNNI"}),  # AMD Zen 3
    ("avx avx2 fma f16c avx512f avx512_vnni amx_tile amx_int8", {"AVX2", "AVX512", "AVX512_VNNI"}, {"AVX_VNNI"})])
def test_the_install_script_names_the_cpus_instruction_sets_and_never_native(tmp_path, cpu, on, off):
    (tmp_path / "cpuinfo").write_text(f"processor\t: 0\nflags\t\t: {cpu}\n")
    out = subprocess.run(["bash", str(ROOT / "scripts" / "install_peers.sh"), "--flags"], capture_output=True,
                         text=True, env={**os.environ, "CPUINFO": str(tmp_path / "cpuinfo")}, check=True).stdout
    args = dict(a.removeprefix("-D").split("=") for a in out.split())
    assert args["GGML_NATIVE"] == "OFF" and {args[f"GGML_AMX_{k}"] for k in ("TILE", "INT8", "BF16")} == {"OFF"}
    assert all(args[f"GGML_{k}"] == "ON" for k in on) and all(args[f"GGML_{k}"] == "OFF" for k in off)


def test_the_missing_package_is_one_line_before_any_work(capfd, monkeypatch, tmp_path):
    monkeypatch.setattr(llamacpp, "PACKAGE", "paradec_no_such_package")
    code = main(["bench", "--methods", "pld", "--prompts", str(tmp_path / "no-prompts.jsonl"), "--peers", "llamacpp"])
    err = capfd.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err  # before the prompt file is read
    assert "--peers llamacpp needs llama-cpp-python" in err and "scripts/install_peers.sh" in err
    assert 'pip install -e ".[peers]"' in err


@pytest.mark.parametrize("flags, words", [(["--model", "some/model"], "leave --model out"),
                                          (["--temperature", "0.7"], "decodes greedily")])
def test_the_peer_needs_the_embedded_file_and_greedy_decoding(capfd, tmp_path, flags, words):
    code = main(["bench", "--methods", "pld", "--prompts", str(tmp_path / "no.jsonl"), "--peers", "llamacpp",
                 *flags])
    err = capfd.readouterr().err
    if llamacpp.importlib.util.find_spec(llamacpp.PACKAGE) is None:
        words = "needs llama-cpp-python"  # the first check that fails here
    assert code == 2 and len(err.splitlines()) == 1 and words in err, err


# ---------------------------------------------------------------- bench, its report and files (tiny model)

def run_bench(tiny_dir, tokenizer, behaviour: str, after: int = 0) -> dict:
    peer = llamacpp.LlamaCpp(1, command=stand_in(behaviour, after), path=Path("model.gguf"))
    try:
        return bench(Runner("cpu"), variants("pld"), ROWS, Options(max_new_tokens=4, memory=False),
                     workers=[peer], model=str(tiny_dir))
    finally:
        peer.close()


def test_bench_reports_the_rows_beside_paradecs(tiny_dir, tokenizer, tmp_path, one_thread):
    report = run_bench(tiny_dir, tokenizer, "good")
    assert list(report["methods"]) == ["ar", "pld", "ar_torch", "llamacpp", "llamacpp_pld"]
    ar, peer, pld = (report["methods"][n] for n in ("ar", "llamacpp", "llamacpp_pld"))
    assert peer["tokens_per_s"] == 100.0 and peer["decode_tokens_per_s"] == round(3 / 0.035, 2)  # 4 / 0.04 s
    assert peer["speedup"] == round(100.0 / ar["tokens_per_s"], 3) and peer["tau"] is None
    odd = sum(len(chat_ids(tokenizer, r["prompt"])) % 2 for r in ROWS)
    assert pld["identical_runs"] == 3 - odd and pld["runs"] == 3  # against llamacpp's text, not paradec's AR
    assert ar["decode_tokens_per_s"] > 0 and report["methods"]["pld"]["identical_runs"] == 3
    section = report["peers"]["llamacpp"]
    assert section["failure"] is None and section["identical_to"]["llamacpp_pld"] == "llamacpp"
    assert all(d["method"] in ("ar", "pld") for d in report["differences"])  # paradec's logits judge paradec's
    table = bench_report.format_report(report)
    head = next(line for line in table.splitlines() if line.startswith("method"))
    assert head.split() == ["method", "speedup", "tau", "alpha", "tok/s", "after", "identical"]
    assert any(line.split()[:1] == ["llamacpp_pld"] and line.split()[-1] == f"{3 - odd}/3" for line in
               table.splitlines())
    assert "llamacpp: llama.cpp (stand-in 0.0 [31m) on model.gguf, 1 threads" in table
    out = tmp_path / "r.json"
    bench_report.save(report, out)
    assert bench_report.load(out)["peers"] == json.loads(json.dumps(report["peers"]))
    with open(out.with_suffix(".csv"), newline="") as f:
        rows = {r["method"]: r for r in csv.DictReader(f) if r["category"] == "all"}
    assert float(rows["llamacpp"]["decode_tokens_per_s"]) == peer["decode_tokens_per_s"]


def test_a_crash_mid_run_is_one_line_and_the_benchmark_goes_on(tiny_dir, tokenizer, one_thread):
    report = run_bench(tiny_dir, tokenizer, "crash", after=4)  # the warm-up, then the first prompt's two runs
    assert list(report["methods"]) == ["ar", "pld", "ar_torch"] and report["methods"]["ar"]["runs"] == 3
    failure = report["peers"]["llamacpp"]["failure"]
    assert failure.startswith("on prompt 2: the llama.cpp worker died of SIGILL")  # after the first prompt's rows
    lines = [line for line in bench_report.format_report(report).splitlines() if line.startswith("llamacpp")]
    assert lines == [f"llamacpp: left out of the results: {failure}"]


def test_load_refuses_a_malformed_peers_section(tmp_path):
    base = {"schema": 2, "kind": "paradec-bench", "methods": {"ar": dict.fromkeys(bench_report.METRICS, 1)},
            "categories": {}}
    for peers in ([1], {"llamacpp": {"failure": 3}}, {"llamacpp": {"identical_to": "ar"}}):
        (tmp_path / "r.json").write_text(json.dumps({**base, "peers": peers}))
        with pytest.raises(bench_report.ResultsError, match="peer"):
            bench_report.load(tmp_path / "r.json")


# ---------------------------------------------------------------- the real peer (pytest -m peers)

@pytest.mark.peers
@pytest.mark.slow
def test_the_real_peer():
    """llama.cpp on the embedded file, 8 tokens: both rows answer in-vocabulary tokens, timed, and the first token
    is paradec's AR's (the same ids went in: a chat answer's first token is far from a tie); and a prompt past
    llama-cpp-python's 512-token batch, where its prompt lookup once failed to store its logits."""
    from paradec.runner import Request

    assert llamacpp.importlib.util.find_spec(llamacpp.PACKAGE), "llama-cpp-python is missing: scripts/install_peers.sh"
    long = {"id": 4, "category": "copy", "prompt": "Repeat this list: " + ", ".join(map(str, range(200)))}
    runner, peer = Runner("cpu", "float32"), llamacpp.LlamaCpp(2)
    try:
        peer.start(runner.target(), [ROWS[2], long], Options(max_new_tokens=8).sampling())
        got, past = peer.run(ROWS[2]), peer.run(long)
    finally:
        peer.close()
    assert peer.failure is None, peer.failure
    assert peer.info["library"] == "llama-cpp-python 0.3.36" and peer.info["file"].endswith(".gguf")
    assert len(past["llamacpp_pld"]["prompt_ids"]) > 512 and len(past["llamacpp_pld"]["tokens"]) == 8
    ar = runner.decode(Request("ar", ROWS[2]["prompt"], max_new_tokens=8))
    assert list(got) == ["llamacpp", "llamacpp_pld"]
    for rec in got.values():
        assert len(rec["tokens"]) == 8 and 0 < rec["first_s"] < rec["wall_s"]
        assert rec["prompt_ids"] == ar.prompt_ids and rec["tokens"][0] == ar.token_ids[0]
