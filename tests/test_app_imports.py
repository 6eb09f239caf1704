"""Dependencies point one way: views/app.py -> ui -> paradec, and replaying recorded traces never imports torch.
The import rules are ruff's (the linter says which line); here: that they catch what they should, and that
rendering every page really leaves torch unloaded."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


# The import policies are ruff's rules (ruff.toml and the folders' own: paradec/, paradec/plots/, ui/, views/),
# checked with a line number by make check and make test; these are violations planted in each folder's name.
PLANTED = [("paradec/core/planted.py", "import streamlit\n", "TID251 `streamlit` is banned"),
           ("paradec/plots/planted.py", "from paradec.core import engine\n", "TID251 `paradec.core.engine`"),
           ("views/planted.py", "def f():\n    import torch\n", "TID251 `torch` is banned"),
           ("ui/planted.py", "import transformers\n", "TID253 `transformers` is banned at the module level"),
           ("scripts/planted.py", "import pickle\n", "TID251 `pickle` is banned")]


@pytest.mark.parametrize("where, code, rule", PLANTED, ids=[p[0] for p in PLANTED])
def test_the_linter_refuses_an_import_the_layers_forbid(where, code, rule):
    ruff = Path(sys.executable).parent / "ruff"
    out = subprocess.run([str(ruff), "check", "--stdin-filename", where, "--output-format", "concise", "-"],
                         input=code, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and rule in out.stdout, out.stdout + out.stderr


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
