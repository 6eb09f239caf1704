"""The kernel's arithmetic without Python or torch (paradec/cpu/csrc/selftest.cpp): compiled for this machine's
own instruction set and run, and cross-compiled for aarch64 with Debian's g++-aarch64-linux-gnu and run under
qemu-user (the portable path an ARM laptop builds), both installed by scripts/system_deps.sh like chromium."""
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import cannot_run

pytestmark = pytest.mark.slow  # a compile each (about 10 s) and an emulated run

SOURCE = Path(__file__).resolve().parents[1] / "paradec" / "cpu" / "csrc" / "selftest.cpp"
FLAGS = ["-O2", "-std=c++17"]


def _built(compiler: str, extra: list[str], out: Path) -> Path:
    if not shutil.which(compiler):
        cannot_run(f"{compiler} is not installed")
    r = subprocess.run([compiler, *FLAGS, *extra, str(SOURCE), "-o", str(out)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def _passes(command: list[str]) -> None:
    r = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]


def test_the_selftest_passes_on_this_machines_instruction_set(tmp_path):
    _passes([str(_built("g++", ["-march=native"], tmp_path / "selftest"))])


def test_the_selftest_passes_on_aarch64_under_qemu(tmp_path):
    binary = _built("aarch64-linux-gnu-g++", ["-static"], tmp_path / "selftest-arm")
    if not shutil.which("qemu-aarch64"):
        cannot_run("qemu-aarch64 is not installed (Debian's qemu-user)")
    _passes(["qemu-aarch64", str(binary)])
