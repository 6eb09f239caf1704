"""PARADEC_KERNEL (paradec.cpu.kernels): auto builds the C++ kernel and falls back to torch's matrix products
when the build fails; require makes a failed build an error, one line naming why; off never builds it, and the
fast forward runs on torch's products; any other value is an error.

A build is made to fail in a child process with a fresh cache folder and a compiler that does not exist (CXX,
which torch's builder reads): this process builds and loads its kernel once, and keeps it."""
import json
import os
import subprocess
import sys

import pytest
import torch

from paradec import cli
from paradec.cpu import kernels
from paradec.cpu.fast import FastTarget, pack_linears
from paradec.cpu.layer_ops import KernelOps, TorchOps

from helpers import ROOT, cannot_run, tiny_model

# make test only: subprocesses that build or refuse the kernel
pytestmark = pytest.mark.slow

ASK = """import json
from paradec import cli
from paradec.cpu import kernels

try:
    print(json.dumps({"built": kernels.kernel() is not None, "why": kernels.why_not()}))
except kernels.KernelError as e:
    print(json.dumps({"error": str(e)}))
"""


def _child(tmp_path, mode: str) -> tuple[dict, list]:
    """kernel() in a fresh process whose build cannot succeed: what it gave, and what is in its cache folder."""
    env = {**os.environ, "PARADEC_KERNEL": mode, "XDG_CACHE_HOME": str(tmp_path),
           "CXX": str(tmp_path / "no-such-c++")}
    run = subprocess.run([sys.executable, "-c", ASK], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1]), list(tmp_path.rglob("*.so"))


@pytest.mark.parametrize("mode", ["require", "auto"])
def test_a_failed_build_is_an_error_only_when_required(tmp_path, mode):
    got, built = _child(tmp_path, mode)
    assert not built
    if mode == "require":
        assert list(got) == ["error"] and "\n" not in got["error"]
        assert got["error"].startswith("PARADEC_KERNEL=require and paradec's C++ kernel cannot be built here: ")
        why = got["error"]
    else:
        assert got["built"] is False
        why = got["why"]
    # The shell's complaint about the compiler, not ninja's last words ("build stopped: subcommand failed").
    assert why.endswith(("no-such-c++: not found", "no-such-c++: No such file or directory")), why


def test_off_never_builds(tmp_path):
    got, built = _child(tmp_path, "off")
    assert got == {"built": False, "why": "PARADEC_KERNEL=off"}
    assert not (tmp_path / "paradec").exists()  # not even the cache folder a build would write to


def test_off_runs_the_fast_forward_on_torchs_products(monkeypatch):
    monkeypatch.setenv("PARADEC_KERNEL", "off")
    fast = FastTarget(tiny_model(16, layers=1, hidden=32))
    assert fast.kernel is None and isinstance(fast.ops, TorchOps)
    assert type(pack_linears(tiny_model(16, layers=1, hidden=32)).lm_head) is torch.nn.Linear  # left unpacked


def test_require_loads_the_kernel_where_it_builds(monkeypatch):
    if kernels.kernel() is None:
        cannot_run(kernels.why_not())
    monkeypatch.setenv("PARADEC_KERNEL", "require")
    assert kernels.kernel() is not None and isinstance(FastTarget(tiny_model(16, layers=1, hidden=32)).ops, KernelOps)


def test_the_command_says_it_in_one_line(monkeypatch, capsys, tiny_dir):
    monkeypatch.setenv("PARADEC_KERNEL", "sometimes")
    assert cli.main(["run", "--method", "ar", "--model", str(tiny_dir), "--prompt", "hi", "--max-new-tokens", "2"]) == 2
    assert capsys.readouterr().err == "paradec: error: PARADEC_KERNEL='sometimes' is none of auto, require, off\n"


@pytest.mark.parametrize("value", ["sometimes", "REQUIRE", "1", "of\nf"])
def test_any_other_value_is_one_clear_error(monkeypatch, capsys, value):
    monkeypatch.setenv("PARADEC_KERNEL", value)
    message = f"PARADEC_KERNEL={value!r} is none of auto, require, off"
    with pytest.raises(kernels.KernelError) as e:
        kernels.kernel()
    assert str(e.value) == message
    assert kernels.main() == 1
    assert capsys.readouterr().err == f"paradec.cpu.kernels: {message}\n"
