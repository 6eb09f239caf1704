"""The repository stands alone: a clone with nothing beside it runs, builds and tests. No code,
Makefile, README, Dockerfile, script or test names a path outside the repository's own folder, and its
modules import one another without circles."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = [
    re.compile(r"\.\./"),  # a relative path that climbs out (../shared, ../data, ...)
    re.compile(r"parents\[\d+\]\s*\.\s*parent\b"),  # Path(__file__).parents[N].parent: the folder beside
    re.compile(r"(\.parent\s*){3,}"),  # the same, climbed one .parent at a time
    re.compile(r"os\.pardir|\.\.[\\/]"),
]
# What a person cloning the repository runs or reads to build it (data files are not code).
CHECKED = ["*.py", "Makefile", "Dockerfile", "*.md", "*.sh", "*.toml", "*.ini", "*.txt", "*.yml", "*.yaml", ".ci/*"]
EXEMPT = {"tests/test_standalone.py"}  # the patterns themselves
HOSTILE = ("tests/test_hostile_", "tests/hostile_")  # paths an attacker sends, which the tests check are refused


def _tracked() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z", "--", *CHECKED], cwd=ROOT, capture_output=True, text=True)
    files = out.stdout.split("\0") if out.returncode == 0 else []
    if not files:  # not a git checkout (an exported copy): walk the folder
        files = [str(p.relative_to(ROOT)) for pat in CHECKED for p in ROOT.rglob(pat) if ".venv" not in p.parts]
    return [ROOT / f for f in files if f and f not in EXEMPT and not f.startswith(HOSTILE)]


# A folder's ruff.toml extends the repository's own, at its root: a relative path that climbs to it and no further.
ROOT_RUFF = re.compile(r'^extend = "(\.\./)+ruff\.toml"$')


def _climbs_to_the_root(path: Path, line: str) -> bool:
    return path.name == "ruff.toml" and bool(ROOT_RUFF.match(line)) and (
        path.parent / line.split('"')[1]).resolve() == ROOT / "ruff.toml"


def test_nothing_refers_to_a_path_outside_the_repository():
    hits = []
    for path in _tracked():
        if not path.is_file():
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if any(p.search(line) for p in OUTSIDE) and not _climbs_to_the_root(path, line):
                hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert not hits, "paths outside the repository:\n" + "\n".join(hits)


def test_the_check_catches_what_it_should():
    bad = ['SPEC = Path(__file__).resolve().parents[2].parent / "shared"', "cat ../shared/data/x.jsonl",
           "p = here.parent.parent.parent / 'x'"]
    good = ['ASSETS = Path(__file__).resolve().parents[1] / "assets"', "a / b", "x = 1 .. 2"]
    assert all(any(p.search(s) for p in OUTSIDE) for s in bad)
    assert not any(p.search(s) for p in OUTSIDE for s in good)



def test_no_import_circles():
    """cli, bench, serve, the app's live mode and the scripts stand side by side over the library."""
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "import_cycles.py"), "paradec", "ui"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "no cycles", out.stdout + out.stderr


# The entry points and the ones each may import: the runner is below all of them, and the command line
# hands its serve and tune subcommands to the service and the tuner. The benchmark (paradec/bench.py) is
# library code that the command line and the app's live mode both call; it imports no entry point.
ENTRY_POINTS = {"paradec/cli.py": {"paradec.serving.serve", "paradec.tuner.tune"}, "paradec/serving/serve.py": set(),
                "paradec/serving/live.py": set(), "paradec/tuner/tune.py": set(), "scripts/record_traces.py": set()}


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at its top or inside a function, relative imports resolved."""
    import ast

    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            mod = ".".join(p for p in (base, node.module or "") if p)
            found.add(mod)
            found.update(f"{mod}.{a.name}" for a in node.names)  # from . import runner
    return found


def test_the_entry_points_stand_side_by_side_over_the_runner():
    names = {p: p.removesuffix(".py").replace("/", ".") for p in ENTRY_POINTS}
    for path, allowed in ENTRY_POINTS.items():
        got = _imports(ROOT / path)
        assert "paradec.runner" in got, f"{path} does not go through paradec.runner"
        others = {m for m in names.values() if m != names[path]}
        assert got & others <= allowed, f"{path} imports {sorted(got & others - allowed)}"
    assert "paradec.runner" in _imports(ROOT / "paradec/bench.py")
    assert not _imports(ROOT / "paradec/bench.py") & set(names.values())


def test_a_folders_linter_config_may_climb_to_the_root_one_and_no_further():
    assert _climbs_to_the_root(ROOT / "ui" / "ruff.toml", 'extend = "../ruff.toml"')
    assert not _climbs_to_the_root(ROOT / "ui" / "ruff.toml", 'extend = "../../ruff.toml"')  # beside the clone
    assert not _climbs_to_the_root(ROOT / "ui" / "other.toml", 'extend = "../ruff.toml"')
