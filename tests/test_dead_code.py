"""No dead code and no code only the tests call: vulture over the product (paradec/, ui/, views/, app.py) finds
no unused function, class, method or variable. What a framework or a file format uses by name is listed, with who
uses it, in tools/dead_code_allowlist.py; the drafter classes the catalogue names by string come from it."""
import subprocess
import sys
from pathlib import Path

from paradec import catalog

ROOT = Path(__file__).resolve().parents[1]


def test_the_product_has_no_dead_or_test_only_code(tmp_path):
    named = tmp_path / "catalogue_names.py"  # the catalogue's "module:Class" strings, as a use of each class
    named.write_text("".join(f"_.{m.drafter.partition(':')[2]}\n" for m in catalog.METHODS.values()))
    out = subprocess.run([sys.executable, "-m", "vulture", "paradec", "ui", "views", "app.py",
                          "tools/dead_code_allowlist.py", str(named), "--min-confidence", "60"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and not out.stdout, out.stdout + out.stderr


def test_the_scan_finds_a_function_nobody_calls(tmp_path):
    (tmp_path / "mod.py").write_text("def used():\n    return 1\n\n\ndef forgotten():\n    return 2\n\n\nused()\n")
    out = subprocess.run([sys.executable, "-m", "vulture", str(tmp_path / "mod.py"), "--min-confidence", "60"],
                         capture_output=True, text=True, timeout=60)
    assert "unused function 'forgotten'" in out.stdout and "'used'" not in out.stdout
