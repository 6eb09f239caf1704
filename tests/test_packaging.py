"""pyproject.toml: `pip install -e .` gives the `paradec` command, its extras pin what requirements*.txt pin
(the files `make setup` installs), and the CPU kernel's sources ship with the package."""
import importlib
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _pins(text: str) -> dict[str, str]:
    """name -> version of every `name==version` (extras in brackets dropped, names lower-case)."""
    found = re.findall(r"^\s*\"?([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^\s\";]+)", text, re.M)
    return {name.lower().replace("_", "-"): version for name, version in found}


def test_the_package_pins_what_the_requirements_pin():
    """Every extra but `peers` (llama.cpp, compiled for 7-10 minutes: scripts/install_peers.sh installs it, and no
    requirements file, so that make setup does not build it)."""
    project = PROJECT["project"]
    extras = [d for name, ds in project["optional-dependencies"].items() if name != "peers" for d in ds]
    declared = "\n".join([*project["dependencies"], *extras])
    files = "\n".join((ROOT / f).read_text() for f in ("requirements.txt", "requirements-ray.txt",
                                                       "requirements-dev.txt"))
    assert _pins(declared) == _pins(files)


def test_the_command_is_the_cli():
    module, _, name = PROJECT["project"]["scripts"]["paradec"].partition(":")
    assert getattr(importlib.import_module(module), name) is importlib.import_module("paradec.cli").main


def test_the_kernel_sources_and_the_browsers_files_are_package_data():
    patterns = PROJECT["tool"]["setuptools"]["package-data"]["paradec"]
    shipped = {p.relative_to(ROOT / "paradec") for pattern in patterns for p in (ROOT / "paradec").glob(pattern)}
    sources = [*(ROOT / "paradec" / "cpu" / "csrc").iterdir(),
               *(p for p in (ROOT / "paradec" / "web").iterdir() if p.suffix in (".js", ".css"))]
    assert shipped == {p.relative_to(ROOT / "paradec") for p in sources}


def test_the_peers_extra_is_pinned_and_installed_by_its_script():
    (pin,) = PROJECT["project"]["optional-dependencies"]["peers"]
    assert re.fullmatch(r"llama-cpp-python==[\d.]+", pin)
    assert pin not in "".join((ROOT / f).read_text() for f in ("requirements.txt", "requirements-dev.txt"))
    script = (ROOT / "scripts" / "install_peers.sh").read_text()
    assert "GGML_NATIVE=OFF" in script and '["peers"]' in script and "--no-binary llama-cpp-python" in script
