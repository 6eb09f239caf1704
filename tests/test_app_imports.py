"""Dependencies point one way: views/app.py -> ui -> paradec, and replaying recorded traces
never imports torch."""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "paradec.run", "paradec.models", "paradec.methods", "paradec.core.engine",
         "paradec.core.verify", "paradec.core.sampling", "paradec.drafters")


def _imports(path: Path, top_level_only: bool) -> list[str]:
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    names = []
    for node in nodes:
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:  # relative import inside a package
                pkg = ".".join(path.relative_to(ROOT).with_suffix("").parts[: -node.level])
                mod = f"{pkg}.{mod}" if mod else pkg
            names += [mod] + [f"{mod}.{a.name}" for a in node.names]
    return names


def _heavy(names: list[str]) -> list[str]:
    return [n for n in names if any(n == h or n.startswith(h + ".") for h in HEAVY)]


def ui_files() -> list[Path]:
    return [ROOT / "app.py", *sorted((ROOT / "views").glob("*.py")), *sorted((ROOT / "ui").glob("*.py"))]


def test_pages_never_import_torch_or_the_model_code():
    for f in [ROOT / "app.py", *sorted((ROOT / "views").glob("*.py"))]:
        assert not _heavy(_imports(f, top_level_only=False)), f


def test_ui_imports_model_code_only_inside_functions():
    for f in ui_files():
        assert not _heavy(_imports(f, top_level_only=True)), f


def test_plots_and_library_never_import_streamlit():
    for f in sorted((ROOT / "paradec").rglob("*.py")):
        names = _imports(f, top_level_only=False)
        assert not [n for n in names if n.split(".")[0] == "streamlit"], f
    for f in sorted((ROOT / "paradec" / "plots").glob("*.py")):
        assert not _heavy(_imports(f, top_level_only=False)), f


RENDER_ALL = """
import glob, json, sys
from streamlit.testing.v1 import AppTest
out = {}
for page in sorted(glob.glob("views/*.py")):  # every page, a new one included
    at = AppTest.from_file("app.py", default_timeout=60).run()
    at.switch_page(page).run()
    out[page] = [e.value for e in at.exception]
print(json.dumps({"exceptions": out, "torch": "torch" in sys.modules,
                  "transformers": "transformers" in sys.modules}))
"""


@pytest.mark.slow
def test_rendering_every_page_from_recorded_traces_never_imports_torch():
    r = subprocess.run([sys.executable, "-c", RENDER_ALL], cwd=ROOT, capture_output=True, text=True, timeout=240,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert not any(got["exceptions"].values()), got["exceptions"]
    assert not got["torch"] and not got["transformers"]
