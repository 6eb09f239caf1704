"""Every panel header says what its panel shows and how to read it: the (?) beside a title is help a
learner can use, not only the honesty label's meaning."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_panel_header_has_help():
    missing = []
    for f in [*sorted((ROOT / "ui").glob("*.py")), *sorted((ROOT / "views").glob("*.py"))]:
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "header":
                if not any(k.arg == "help" for k in node.keywords):
                    missing.append(f"{f.relative_to(ROOT)}:{node.lineno}")
    assert not missing, missing
