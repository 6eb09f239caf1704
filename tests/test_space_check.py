"""make space-check (scripts/space_check.py) builds the Space's image and checks it in Chromium: 15 min and root, so
not here. Here: the target and the packages it installs, what the script reads from the repository (the base, the
torch index, the port), how it reads a failed build and ui_check's summary; and what it checks the app for, that
Home says whether the C++ kernel is loaded (ui.live.kernel_note, from paradec.cpu.kernels.state, which never builds
it)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from helpers import ROOT

spec = importlib.util.spec_from_file_location("space_check", ROOT / "scripts" / "space_check.py")
space_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(space_check)


def test_make_space_check_installs_its_tools_and_is_not_part_of_make_test():
    makefile = (ROOT / "Makefile").read_text()
    target = makefile.split("\nspace-check:", 1)[1].split("\n\n", 1)[0]
    assert "scripts/system_deps.sh --space" in target and "scripts/space_check.py" in target
    test = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "space" not in test


def test_system_deps_names_the_space_checks_packages(tmp_path):
    """With nothing on PATH, --space --list names chromium's packages, buildah and mmdebstrap, not the compiler."""
    env = {**os.environ, "PATH": str(tmp_path)}
    said = subprocess.run(["/bin/bash", "scripts/system_deps.sh", "--space", "--list"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=30)
    assert said.returncode == 0, said.stderr
    assert said.stdout.split() == ["chromium", "fonts-liberation", "fonts-dejavu-core", "buildah", "mmdebstrap"]


def test_the_script_reads_the_base_the_torch_index_and_the_port_from_the_repository():
    dockerfile = ROOT / "Dockerfile"
    assert space_check.base_image(dockerfile) == "docker.io/library/python:3.11-slim"
    assert space_check.dockerfile_arg(dockerfile, "TORCH_INDEX") == "https://download.pytorch.org/whl/cpu"
    lines = (ROOT / "README.md").read_text().splitlines()
    assert f"app_port: {space_check.front_matter_port()}" in lines[:lines.index("---", 1)]


@pytest.mark.parametrize("name, full", [("python:3.11-slim", "docker.io/library/python:3.11-slim"),
                                        ("someone/image:1", "docker.io/someone/image:1"),
                                        ("ghcr.io/someone/image", "ghcr.io/someone/image"),
                                        ("localhost:5000/image", "localhost:5000/image")])
def test_a_short_base_name_is_docker_hubs(tmp_path, name, full):
    (tmp_path / "Dockerfile").write_text(f"# a comment\nFROM {name}\nRUN true\n")
    assert space_check.base_image(tmp_path / "Dockerfile") == full


def test_a_failed_build_is_told_by_its_step_and_that_steps_last_words():
    log = """STEP 13/15: RUN /home/user/venv/bin/python -m paradec.cpu.kernels
paradec.cpu.kernels: PARADEC_KERNEL=require and paradec's C++ kernel cannot be built here: c++: not found
subprocess exited with status 1
subprocess exited with status 1
Error: building at STEP "RUN /home/user/venv/bin/python -m paradec.cpu.kernels": exit status 1
"""
    said = space_check.build_failure(log)
    assert "\n" not in said
    assert 'Error: building at STEP "RUN /home/user/venv/bin/python -m paradec.cpu.kernels"' in said
    assert said.endswith("its last words: paradec.cpu.kernels: PARADEC_KERNEL=require and paradec's C++ kernel "
                         "cannot be built here: c++: not found")


def test_error_boxes_count_as_problems_beside_ui_checks_own():
    """ui_check fails on exception boxes and missing text; an error box (a live run that failed, under require a
    kernel that does not load) it lists without failing: the check counts it."""
    clean = {"problems": [], "pages": [{"path": "/", "error_alerts": [], "clicks": []}]}
    assert space_check.problems(clean) == []
    failed = {"problems": ["/: expected text 'CPU kernel: loaded.' not shown"],
              "pages": [{"path": "/pld?source=live", "error_alerts": [],
                         "clicks": [{"label": space_check.RUN_LIVE, "error_alerts": ["KernelError: no compiler"]}]}]}
    assert space_check.problems(failed) == ["/: expected text 'CPU kernel: loaded.' not shown",
                                            "/pld?source=live: error box: KernelError: no compiler"]
    setup = {"error": "streamlit exited early (rc=1). Log tail:\nloading\nparadec.cpu.kernels: PARADEC_KERNEL=require"}
    assert space_check.problems(setup) == ["streamlit exited early (rc=1). Log tail: ... paradec.cpu.kernels: "
                                           "PARADEC_KERNEL=require"]


def test_the_pages_it_opens_and_the_text_it_expects_are_the_apps():
    from ui import guide

    urls = [space_check.LIVE, *space_check.PAGES]
    assert {url.split("?")[0].strip("/") for url in urls} <= set(guide.pages())
    shown = (ROOT / "ui" / "page.py").read_text().replace("**", "")  # as the browser shows the markdown
    assert space_check.RUN_LIVE in shown and space_check.LIVE_DONE in shown


STATE = """import json
from paradec.cpu import kernels
before = kernels.state()
kernels.kernel()
print(json.dumps([before, kernels.state(), kernels.why_not()]))
"""


def test_kernel_state_never_builds_and_then_says_what_the_build_gave(tmp_path):
    """A fresh process has not tried: state() says so without building (no cache folder made); after kernel()
    it says why the build failed (a compiler that does not exist), as why_not() does."""
    env = {**os.environ, "PARADEC_KERNEL": "auto", "XDG_CACHE_HOME": str(tmp_path),
           "CXX": str(tmp_path / "no-such-c++")}
    probe = "from paradec.cpu import kernels; print(kernels.state())"
    first = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=120)
    assert first.stdout.strip() == "not tried" and not (tmp_path / "paradec").exists(), first.stderr[-2000:]
    said = subprocess.run([sys.executable, "-c", STATE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    before, after, why = json.loads(said.stdout.strip().splitlines()[-1])
    assert before == "not tried" and after == why and "no-such-c++" in after


@pytest.mark.parametrize("state, says", [("loaded", space_check.KERNEL_LOADED),
                                         ("not tried", "CPU kernel: not loaded yet."),
                                         ("off", "CPU kernel: off"),
                                         ("FileNotFoundError: c++: not found", "CPU kernel: not available here")])
def test_home_says_whether_the_kernel_is_loaded(monkeypatch, state, says):
    from paradec.cpu import kernels
    from ui import live

    monkeypatch.setattr(kernels, "state", lambda: state)
    note = live.kernel_note().replace("**", "")
    assert note.startswith(says) and (state in note if ":" in state else True)


def test_home_draws_the_kernels_note():
    from streamlit.testing.v1 import AppTest

    from helpers import APP

    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception and any(c.value.startswith("**CPU kernel: ") for c in at.caption)
