"""Every writing option of every command against every way an output can destroy what the user made
(paradec.traces.files' rule): the output is a file the command reads (a hard link or a symlink to it), another
output of the same command (a hard link: the same inode), a read-only file (refused unless --force), a symlink
(followed: accepted), a dangling symlink (its target is made: accepted), a symlink loop, a FIFO, a folder, or
in a missing folder. A refusal is one line and exit 2 before anything loads, with every file left as it was;
an accepted output gets as far as the missing model (--model names none), nothing written.
The trainers' outputs are checked as their command checks them, before it loads anything (check_outputs)."""
from __future__ import annotations

import io
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli import assert_one_line_error
from test_hostile_cli import _within

from paradec.cli import main
from paradec.traces import files
from paradec.traces.trace import Trace
from paradec.train.__main__ import check_outputs
from paradec.train.__main__ import parser as train_parser

# make test only: real processes writing through pipes, FIFOs and closed descriptors
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = '{"prompt": "a b a b", "category": "x"}\n{"question_id": 1, "prompt": "c d c d", "category": "x"}\n'


class Option:
    """A writing option: its command line for an output at `out` (inputs in `d`), the path the hostile case
    is made at, another output the same command writes (None: it writes one), and a file it reads."""

    def __init__(self, argv, spot=lambda out: out, other=None, folder=False, read=None):
        self.argv, self.spot, self.other, self.folder = argv, spot, other, folder
        self.read = read or ("data/manifest.json" if folder else "p.jsonl")


def _run(d, out):
    return ["run", "--method", "pld", "--prompt-file", d / "prompt.txt", "--trace", out]


def _bench(d, out):
    return ["bench", "--methods", "pld", "--prompts", d / "p.jsonl", "--out", out]


def _train(command, *extra):
    return lambda d, out: [command, "--out", out, "--data", d / "data", "--model", d / "no-model", *extra]


CLI = {
    "run --trace": Option(_run, read="prompt.txt"),
    "run --trace, a batch": Option(lambda d, out: [*_run(d, out), "--prompt-file", d / "prompt.txt"],
                                   spot=lambda out: out.with_name("t-1.json"),
                                   other=lambda out: out.with_name("t-2.json"), read="prompt.txt"),
    "bench --out": Option(_bench, other=lambda out: out.with_suffix(".csv")),
    "bench --out, its CSV": Option(_bench, spot=lambda out: out.with_suffix(".csv"), other=lambda out: out),
    "tune --state": Option(lambda d, out: ["tune", "--methods", "pld", "--prompts", d / "p.jsonl", "--state", out,
                                           "--preset-out", out.with_name("preset.json")],
                           other=lambda out: out.with_name("preset.json")),
    "tune --preset-out": Option(lambda d, out: ["tune", "--methods", "pld", "--prompts", d / "p.jsonl", "--state",
                                                out.with_name("state.json"), "--preset-out", out],
                                other=lambda out: out.with_name("state.json")),
}
TRAIN = {
    "train medusa --out": Option(_train("medusa"), lambda out: out / "card.md", lambda out: out / "stats.json", True),
    "train draft --out": Option(_train("draft"), lambda out: out / "card.md", lambda out: out / "model.safetensors",
                                True),
    "train eagle --out": Option(_train("eagle", "--version", "1"), lambda out: out / "config.json",
                                lambda out: out / "head.safetensors", True),
    "train early_exit --out": Option(_train("early_exit"), lambda out: out / "stats.json",
                                     lambda out: out / "card.md", True),
    "train cllm --out": Option(lambda d, out: ["cllm", "--out", out], lambda out: out / "card.md",
                               lambda out: out / "checkpoint.pt", True),
    "train stop --out": Option(_train("stop"), lambda out: out / "stop.json", None, True),
    "train data --data": Option(lambda d, out: ["data", "--data", out, "--features", d / "features", "--model",
                                                d / "model"], lambda out: out / "manifest.json", None, True,
                                "model/config.json"),
}
OPTIONS = {**CLI, **TRAIN}
CASES = ["an input (hard link)", "an input (symlink)", "another output", "read-only", "read-only, --force", "symlink",
         "dangling symlink", "symlink loop", "FIFO", "folder", "missing folder"]
ACCEPTED = {"read-only, --force", "symlink", "dangling symlink"}


@pytest.fixture
def d(tmp_path) -> Path:
    """The inputs: a prompt, a prompt file, self-distillation data, a model folder; `elsewhere` for link
    targets."""
    (tmp_path / "prompt.txt").write_text("a b a b")
    (tmp_path / "p.jsonl").write_text(PROMPTS)
    for folder, name in [("data", "manifest.json"), ("model", "config.json")]:
        (tmp_path / folder).mkdir()
        (tmp_path / folder / name).write_text("{}")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "target.json").write_text("the link's target")
    return tmp_path


def make(case: str, option: Option, d: Path) -> Path:
    """The output argument with the case made at the option's spot."""
    out = d / "out" / ("folder" if option.folder else "t.json")
    out = d / "missing" / out.name if case == "missing folder" else out
    spot = option.spot(out)
    if case == "missing folder":
        return out
    spot.parent.mkdir(parents=True, exist_ok=True)
    read = d / option.read
    if case == "an input (hard link)":
        os.link(read, spot)
    elif case == "an input (symlink)":
        spot.symlink_to(read)
    elif case == "another output":
        other = option.other(out)
        other.parent.mkdir(parents=True, exist_ok=True)
        other.write_text("the other output")
        os.link(other, spot)
    elif case.startswith("read-only"):
        spot.write_text("protected")
        spot.chmod(0o444)
    elif case == "symlink":
        spot.symlink_to(d / "elsewhere" / "target.json")
    elif case == "dangling symlink":
        spot.symlink_to(d / "elsewhere" / "new.json")
    elif case == "symlink loop":
        spot.symlink_to(spot.with_name("loop"))
        spot.with_name("loop").symlink_to(spot)
    elif case == "FIFO":
        os.mkfifo(spot)
    elif case == "folder":
        spot.mkdir()
    return out


def snapshot(root: Path) -> dict:
    """Every entry under root: its kind, mode, and its bytes or link target (a FIFO is never opened)."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = os.lstat(p)
            body = (os.readlink(p) if stat.S_ISLNK(st.st_mode) else p.read_bytes() if stat.S_ISREG(st.st_mode)
                    else None)
            seen[str(p.relative_to(root))] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), body)
    return seen


def applies(case: str, name: str) -> bool:
    option = OPTIONS[name]
    if case == "another output":
        return option.other is not None
    return not (case.startswith("an input") and name == "train cllm --out")  # it names no input file or folder


def pairs(names) -> list[tuple[str, str]]:
    return [(name, case) for name in names for case in CASES if applies(case, name)]


@pytest.mark.parametrize("name, case", pairs(CLI))
def test_every_command_line_output_against_every_case(capfd, d, name, case):
    option = OPTIONS[name]
    out = make(case, option, d)
    force = ["--force"] if case.endswith("--force") else []
    before = snapshot(d)
    code = _within(30, lambda: main([*map(str, option.argv(d, out)), *force, "--model", str(d / "no-model")]))
    _, err = capfd.readouterr()
    assert snapshot(d) == before  # refused, or stopped at the missing model: nothing written either way
    if case in ACCEPTED:
        assert code == 2 and "cannot write" not in err and "Traceback" not in err, err
    else:
        assert_one_line_error(code, "", err, "cannot write")


@pytest.mark.parametrize("name, case", pairs(TRAIN))
def test_every_trainer_output_against_every_case(d, name, case):
    option = OPTIONS[name]
    out = make(case, option, d)
    args = train_parser().parse_args([*map(str, option.argv(d, out)), *(["--force"] if "--force" in case else [])])
    before = snapshot(d)
    if case in ACCEPTED:
        check_outputs(args)
    else:
        with pytest.raises(files.Refused, match="cannot write"):
            check_outputs(args)
    assert snapshot(d) == before


@pytest.mark.parametrize("what", ["a FIFO", "a file", "a dangling symlink"])
def test_a_trainer_out_that_is_no_folder_is_refused(d, what):
    out = d / "out"
    {"a FIFO": lambda: os.mkfifo(out), "a file": lambda: out.write_text("mine"),
     "a dangling symlink": lambda: out.symlink_to(d / "nowhere")}[what]()
    with pytest.raises(files.Refused, match="not a folder"):
        check_outputs(train_parser().parse_args(["medusa", "--out", str(out)]))


@pytest.mark.parametrize("args, words", [
    (["bench", "--methods", "pld", "--prompts", "{d}/p.jsonl", "--out", "{d}/p.jsonl"], "--prompts"),
    (["bench", "--methods", "pld", "--prompts", "{d}/q.csv", "--out", "{d}/q.json"], "--prompts"),
    (["bench", "--methods", "pld", "--prompts", "{d}/p.jsonl", "--out", "{d}/r.csv"], "results"),
    (["bench", "--methods", "pld", "--prompts", "{d}/p.jsonl", "--preset", "{d}/s.json", "--out", "{d}/s.json"],
     "--preset"),
    (["tune", "--methods", "pld", "--prompts", "{d}/p.jsonl", "--state", "{d}/s.json", "--preset-out", "{d}/s.json"],
     "state"),
    (["tune", "--methods", "pld", "--prompts", "{d}/p.jsonl", "--state", "{d}/p.jsonl"], "--prompts"),
    (["run", "--method", "pld", "--prompt-file", "{d}/prompt.txt", "--trace", "{d}/prompt.txt"], "--prompt-file"),
    (["run", "--method", "pld", "--prompt", "hi", "--preset", "{d}/s.json", "--trace", "{d}/s.json"], "--preset"),
])
def test_the_reported_pairs_are_refused_by_path(capfd, d, args, words):
    """The issue's own examples, with the same path typed twice (the cases above reach it by links)."""
    (d / "q.csv").write_text(PROMPTS)
    (d / "s.json").write_text('{"kind": "paradec-preset", "schema": 1, "methods": {}}')
    before = snapshot(d)
    code = main([a.format(d=d) for a in args] + ["--model", str(d / "no-model")])
    assert_one_line_error(code, *capfd.readouterr(), "cannot write", words)
    assert snapshot(d) == before


def test_an_output_in_a_folder_the_command_reads_is_refused_only_over_its_files(capfd, d):
    """--model's folder: a new trace beside the weights is fine, one over its config is not."""
    for name, words in [("config.json", "lies in --model"), ("new.json", "cannot load model")]:
        code = main(["run", "--method", "pld", "--prompt", "hi", "--model", str(d / "model"), "--trace",
                     str(d / "model" / name)])
        assert_one_line_error(code, *capfd.readouterr(), words)


# ---------------------------------------------------------------- the writes themselves

def test_a_symlinked_output_writes_its_target_and_keeps_the_link(tmp_path):
    target, link, dangling = tmp_path / "real.json", tmp_path / "link.json", tmp_path / "dangling.json"
    target.write_text("old")
    target.chmod(0o600)
    link.symlink_to(target.name)  # relative: resolved from the link's folder
    dangling.symlink_to(tmp_path / "made.json")
    files.write_atomic(link, "new")
    files.write_atomic(dangling, "made")
    assert link.is_symlink() and target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert dangling.is_symlink() and (tmp_path / "made.json").read_text() == "made"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.json", "link.json", "made.json", "real.json"]


def test_read_only_is_the_files_mode_even_for_root(tmp_path):
    """Root may write anything, so the mode is what says the user protected it (a shell as a user refuses)."""
    path = tmp_path / "f"
    path.write_text("x")
    path.chmod(0o444)
    assert files.read_only(path)
    path.chmod(0o644)
    assert not files.read_only(path)
    with pytest.raises(files.Refused, match="read-only"):
        path.chmod(0o444)
        files.plan([("results", path)])
    assert files.plan([("results", path)], force=True) == [path]


def test_the_command_says_what_it_will_write_before_any_work(capfd, d):
    link = d / "link.json"
    link.symlink_to(d / "elsewhere" / "target.json")
    code = main(["run", "--method", "pld", "--prompt", "hi", "--trace", str(link), "--model", str(d / "no-model")])
    err = capfd.readouterr().err
    assert code == 2 and err.index("run: will write trace") < err.index("paradec: error:")
    assert f"a link to {d / 'elsewhere' / 'target.json'}" in err


def test_control_characters_are_shown_escaped():
    assert files.printable("a\x1b[2Jb\x9b\x07\x7f\tc\n") == "a\\x1b[2Jb\\x9b\\x07\\x7f\\x09c\\x0a"
    assert files.printable("tab\tline\n", keep="\n\t") == "tab\tline\n"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_output_on_a_terminal_shows_control_characters_escaped(monkeypatch):
    text = "red \x1b[31mtext\x1b[0m\n\tnext"
    for stream, shown in [(Terminal(), "red \\x1b[31mtext\\x1b[0m\n\tnext\n"), (io.StringIO(), text + "\n")]:
        monkeypatch.setattr(sys, "stdout", stream)
        files.print_out(text)  # a pipe or a file gets the text as it is
        assert stream.getvalue() == shown


def test_a_closed_stdout_is_one_line(capfd, monkeypatch):
    monkeypatch.setattr(sys, "stdout", None)  # what Python makes of `>&-`
    with pytest.raises(files.StdoutError, match="closed"):
        files.print_out("x")


# ---------------------------------------------------------------- real processes (started together: each waits
# seconds on its imports)

def _start(argv: list, **how) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return subprocess.Popen(list(map(str, argv)), cwd=ROOT, env=env, text=True, stderr=subprocess.PIPE, **how)


def _paradec(*args) -> list:
    return [sys.executable, "-m", "paradec", *args]


def _decode(tiny_dir, trace) -> list:
    return ["run", "--method", "pld", "--prompt", "a b a b a b", "--model", tiny_dir, "--max-new-tokens", 8,
            "--trace", trace]


def test_a_reader_that_left_ends_the_command_quietly_with_the_trace_written(capfd, monkeypatch, d, tiny_dir):
    """EPIPE (`run ... | head -c 10` once head has gone): exit 141, as a shell reports a writer its reader left,
    nothing on stderr after what it said it would write, and the trace written before the text is whole (in
    the file the link given as --trace points to, the link kept)."""
    class Left(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    link, target = d / "t.json", d / "elsewhere" / "target.json"  # and the trace goes through a link
    link.symlink_to(target)
    monkeypatch.setattr(sys, "stdout", Left())
    monkeypatch.setattr(os, "dup2", lambda *fds: None)  # leave pytest's captured stdout and stderr where they are
    code = main(list(map(str, _decode(tiny_dir, link))))
    assert code == 141 and "error" not in capfd.readouterr().err
    assert link.is_symlink() and Trace.load(target).token_ids


@pytest.mark.slow
def test_a_closed_or_piped_stdout_ends_without_a_traceback(tiny_dir, tmp_path):
    """`run ... >&-` (fd 1 closed before Python starts: one line, exit 2) and `run ... | head -c 10` (exit 141,
    or 0 when head read it all in time): no traceback, and the trace, written before the text, whole."""
    closed = _start(_paradec(*_decode(tiny_dir, tmp_path / "closed.json")), stdout=subprocess.DEVNULL,
                    preexec_fn=lambda: os.close(1))
    command = shlex.join(map(str, _paradec(*_decode(tiny_dir, tmp_path / "head.json"))))
    head = _start(["bash", "-c", f"{command} | head -c 10; exit ${{PIPESTATUS[0]}}"], stdout=subprocess.PIPE)
    for p, codes, words in [(closed, {2}, "cannot write to standard output"), (head, {0, 141}, "")]:
        out, err = p.communicate(timeout=300)
        assert p.returncode in codes and "Traceback" not in err and words in err, err
    assert len(out) <= 10
    for name in ("closed.json", "head.json"):
        assert Trace.load(tmp_path / name).token_ids


NO_OVERRIDE = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--inh-caps",
               "-dac_override,-dac_read_search"]  # root as a user: file modes apply to it, as a shell's would
AS_A_USER = """
import os, sys
from paradec.traces import files
protected, foreign, forced = sys.argv[1:]
for path in (protected, foreign):
    try:
        files.plan([("trace", path)])
    except files.Refused as e:
        print("refused:", e)
files.plan([("trace", forced)], force=True)
files.write_atomic(forced, "replaced")
"""


@pytest.mark.slow
def test_a_read_only_output_survives_a_real_user_unless_forced(tiny_dir, tmp_path):
    """Root without the capability to override file modes is a user to the kernel: the rule in a process of
    its own (the standard library only: quick), then the command line's refusal."""
    protected, foreign, forced = tmp_path / "protected.json", tmp_path / "foreign.json", tmp_path / "forced.json"
    for path, mode in [(protected, 0o444), (foreign, 0o644), (forced, 0o444)]:
        path.write_text("mine")
        path.chmod(mode)
    os.chown(foreign, 65534, 65534)  # nobody's: writable by its owner only
    shell = _start([*NO_OVERRIDE, "sh", "-c", f"echo x > {protected}"])
    rule = _start([*NO_OVERRIDE, sys.executable, "-c", AS_A_USER, protected, foreign, forced], stdout=subprocess.PIPE)
    cli = _start([*NO_OVERRIDE, *_paradec(*_decode(tiny_dir, protected))], stdout=subprocess.PIPE)
    assert shell.wait(timeout=60) != 0  # a shell refuses it too
    out, err = rule.communicate(timeout=60)
    assert rule.returncode == 0 and out.count("refused:") == 2 and out.count("read-only") == 2, out + err
    assert_one_line_error(cli.wait(timeout=300), cli.stdout.read(), cli.stderr.read(), "read-only")
    assert protected.read_text() == foreign.read_text() == "mine"
    assert forced.read_text() == "replaced" and stat.S_IMODE(forced.stat().st_mode) == 0o444  # still protected
