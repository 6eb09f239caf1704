"""Every import runs down: the project stands in named layers, and a module imports only from its own layer or
those below it, at its top or inside a function alike. The layers, from the ground up, are LAYERS; the
drawing in docs/architecture.md is this list. A new import that runs back up fails here with its file and line."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# From the ground up: each layer's files and folders (a folder holds everything under it). A module's layer is
# the one naming its longest matching path.
LAYERS = [
    # steps, records, the loop, no method; web: the browser's files; words: a language's catalogue
    ("core", ["paradec/__init__.py", "paradec/core", "paradec/cache.py", "paradec/web", "paradec/words.py"]),
    ("catalog", ["paradec/catalog.py"]),  # every method described once
    ("traces", ["paradec/traces", "paradec/data.py"]),  # files, traces as JSON, the prompts
    ("kernel", ["paradec/cpu"]),  # the CPU forward and its C++ extension
    ("costs", ["paradec/costs"]),  # the machine, the roofline, cost models
    ("presets", ["paradec/tuning"]),  # the devices' presets and preset files
    ("methods", ["paradec/drafters", "paradec/methods.py"]),  # one drafter per method
    ("models", ["paradec/models"]),  # loading targets, drafts and fine-tuned copies
    ("runs", ["paradec/run.py", "paradec/lanes.py", "paradec/runner.py"]),  # a Request in, a Trace out
    ("measures", ["paradec/bench.py", "paradec/bench_batch.py", "paradec/bench_memory.py", "paradec/bench_report.py",
                  "paradec/plots", "paradec/claims.py", "paradec/production",
                  "paradec/peers"]),  # the benchmark and its peers, figures
    ("learn", ["paradec/learn"]),  # predict questions and exercises, from the traces and the catalog
    ("stage", ["paradec/stage"]),  # what a page shows of a trace, in a language: the player's frames, the words
    # the command line (and what its commands read and write), the service, the tuner, the trainers
    ("entry points", ["paradec/cli.py", "paradec/cli_run.py", "paradec/outputs.py", "paradec/__main__.py",
                      "paradec/kernel_note.py", "paradec/serving", "paradec/tuner", "paradec/train", "paradec/site"]),
    ("app helpers", ["ui"]),
    ("pages", ["views", "app.py"]),
]
RANK = {name: k for k, (name, _) in enumerate(LAYERS)}


def _module_file(module: str) -> str | None:
    """The project file a dotted module name is, if it is one of ours."""
    path = Path(*module.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if (ROOT / candidate).is_file():
            return candidate.as_posix()
    return None


def layer_of(relpath: str) -> str | None:
    best = None
    for name, places in LAYERS:
        for place in places:
            if (relpath == place or relpath.startswith(place + "/")) and (best is None or len(place) > len(best[1])):
                best = (name, place)
    return best[0] if best else None


def _imported(rel: Path, text: str):
    """(line, module file) for every import of a project module in a file's text, relative imports resolved."""
    package = rel.with_suffix("").parts[:-1] if rel.name != "__init__.py" else rel.parent.parts
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            mod = ".".join(p for p in (base, node.module or "") if p)
            names = [mod] + [f"{mod}.{a.name}" for a in node.names]  # from . import runner: a module too
        else:
            continue
        for name in names:
            target = _module_file(name)
            if target:
                yield node.lineno, target


def sources() -> list[Path]:
    return sorted([ROOT / "app.py", *ROOT.glob("paradec/**/*.py"), *ROOT.glob("ui/*.py"), *ROOT.glob("views/*.py")])


def back_imports(files: dict[str, str]) -> list[str]:
    """The imports that run back up, among files (a path under the root: its text)."""
    found = []
    for rel, text in files.items():
        here = layer_of(rel)
        for line, target in _imported(Path(rel), text):
            there = layer_of(target)
            if there is not None and RANK[there] > RANK[here]:
                found.append(f"{rel}:{line} ({here}) imports {target} ({there})")
    return found


def test_every_module_has_a_layer():
    assert [p.relative_to(ROOT).as_posix() for p in sources() if layer_of(p.relative_to(ROOT).as_posix()) is None] == []


def test_no_import_runs_back_up_a_layer():
    assert back_imports({p.relative_to(ROOT).as_posix(): p.read_text() for p in sources()}) == []


def test_the_check_catches_a_back_import():
    """core importing a drafter, or the trace files the catalog's users, is what the check exists for."""
    planted = {"paradec/core/engine.py": "import torch\n\ndef f():\n    from ..drafters.pld import PromptLookup\n",
               "paradec/traces/trace.py": "from paradec.runner import Runner\n",
               "ui/page.py": "from views import sps\n"}
    assert back_imports(planted) == ["paradec/core/engine.py:4 (core) imports paradec/drafters/pld.py (methods)",
                                     "paradec/traces/trace.py:1 (traces) imports paradec/runner.py (runs)",
                                     "ui/page.py:1 (app helpers) imports views/sps.py (pages)"]


def test_the_models_package_is_a_face():
    """paradec/models/__init__.py hands names on: at most 40 lines of code, no function or class of its own."""
    tree = ast.parse((ROOT / "paradec/models/__init__.py").read_text())
    assert not [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    code = {n for node in tree.body if not isinstance(node, ast.Expr) for n in range(node.lineno, node.end_lineno + 1)}
    assert len(code) <= 40
