"""The README and docs/ stay readable and true: the README is short, its bench table (and docs/kernel.md's
forward-cost table) is the one scripts/readme_numbers.py draws from the shipped files, every relative link
and anchor resolves, and neither the docs nor the code's comments and docstrings carry clock times or
tracker references (a measured figure names its file; history lives in git). No model, no torch."""
from __future__ import annotations

import ast
import importlib.util
import io
import json
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]
CODE_DIRS = ["paradec", "ui", "views", "pages", "scripts", "tests"]
CODE_FILES = ["app.py"]
MAX_README_LINES = 300

CLOCK = re.compile(r"(?<![\d.:/])(?:[01]?\d|2[0-3]):[0-5]\d(?![\d:])")
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
ISSUE_WORD = re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE)
ISSUE_HASH = re.compile(r"(?:^|(?<=[\s(\[]))#(\d{1,3})\b(?![\w-])")
COLOUR_WORDS = re.compile(r"colou?r|fill|stroke|background|border", re.IGNORECASE)


def _load_generator():
    spec = importlib.util.spec_from_file_location("readme_numbers", ROOT / "scripts" / "readme_numbers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


numbers = _load_generator()


# ---------------------------------------------------------------- what the checks look for

def issue_refs(text: str) -> list[str]:
    """Tracker references in text: the word and a number, or a hash and one to three digits. A hex colour
    is none: letters in it never match, and a digits-only one (a grey's three equal digits, or any on a
    line that names a colour) is skipped."""
    found = [m.group(0) for m in ISSUE_WORD.finditer(text)]
    for line in text.splitlines():
        for m in ISSUE_HASH.finditer(line):
            digits = m.group(1)
            if len(digits) == 3 and (len(set(digits)) == 1 or COLOUR_WORDS.search(line)):
                continue
            found.append(m.group(0))
    return found


def clock_times(text: str) -> list[str]:
    return CLOCK.findall(text)


def test_the_patterns_find_what_they_should_and_nothing_else():
    hits = ["(#10)", "the #17 goal", "see issue 39", "Issue 16, item 3", "issues 16", "#5 and", "[#18]"]
    misses = ["color #fff3bf", "#999", "fill: #1f77b4", "line=dict(color='#123456')", "x#12", "&#123;",
              "## Methods", "port 8501", "a #hashtag", "step #1a"]
    assert all(issue_refs(h) for h in hits), [h for h in hits if not issue_refs(h)]
    assert not any(issue_refs(m) for m in misses), [m for m in misses if issue_refs(m)]
    assert clock_times("run of 08:54 UTC") and clock_times("at 9:02,") and clock_times("(23:00-23:50)")
    for fine in ("0.0.0.0:8501", "http://gpu:8000", "localhost:8765", "1:1", "a[1:3]", "12:345", "v1:2"):
        assert not clock_times(fine), fine
    assert DATE.search("(2026-12-01)") and not DATE.search("v2.0.26-12")


# ---------------------------------------------------------------- the README

def test_the_readme_is_short_and_opens_with_the_space_header():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines: move detail into docs/"
    assert lines[0] == "---" and lines[9] == "---" and lines[1].startswith("title:")


def test_the_generated_tables_are_what_the_files_give():
    assert README.read_text(encoding="utf-8") == numbers.expected(), \
        "README.md's bench table is not assets/bench/cpu-2core.json's: run python scripts/readme_numbers.py"
    kernel = ROOT / "docs" / "kernel.md"
    assert kernel.read_text(encoding="utf-8") == numbers.expected_kernel_doc(), \
        "docs/kernel.md's forward-cost table is stale: run python scripts/readme_numbers.py"
    assert (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8") == numbers.expected_architecture_doc(), \
        "docs/architecture.md's table of where each method lives is not the catalogue's: run scripts/readme_numbers.py"


def test_the_bench_block_reads_every_method_of_the_file():
    report = json.loads((ROOT / numbers.BENCH).read_text(encoding="utf-8"))
    block = numbers.block(report)
    rows = [line for line in block.splitlines() if line.startswith("| `")]
    assert [r.split("`")[1] for r in rows][0] == "ar"
    assert sorted(r.split("`")[1] for r in rows) == sorted(report["methods"])
    for row in rows:
        name = row.split("`")[1]
        r = report["methods"][name]
        assert f"| {r['speedup']:.2f}x |" in row and f"{r['identical_runs']}/{r['runs']}" in row
        assert f"| {r['tokens_per_s']:.1f} |" in row
    assert numbers.BENCH in block and f"{report['prompts']} prompts" in block
    assert f"{report['max_new_tokens']} new tokens" in block and report["machine"]["cpu"] in block


def test_the_block_orders_rows_and_names_the_acceptance_as_the_file_does():
    row = {"tau": 1.5, "identical_runs": 2, "runs": 2, "tokens_per_s": 10.0}
    report = {"prompts": 2, "max_new_tokens": 8, "machine": {"cpu": "X", "cores": 1},
              "methods": {"slow": dict(row, speedup=0.9, acceptance=0.1),
                          "hf_generate": dict(row, speedup=0.5, tau=None, acceptance=None),
                          "fast": dict(row, speedup=1.4, acceptance=0.456),
                          "ar": dict(row, speedup=1.0, tau=1.0, acceptance=None)}}
    rows = [line.split("`")[1] for line in numbers.block(report).splitlines() if line.startswith("| `")]
    assert rows == ["ar", "fast", "slow", "hf_generate"]  # AR, paradec's by speed-up, then the peers
    text = numbers.block(report)
    assert "| acceptance |" in text and "| 0.46 |" in text and "2.00x as fast as `hf_generate`" in text
    old = json.loads((ROOT / "assets" / "bench" / "cpu-2core-zen3.json").read_text(encoding="utf-8"))
    assert "| acceptance_rate |" in numbers.block(old)  # schema 1 holds only accepted ÷ drafted


def test_the_script_checks_and_rewrites_atomically(tmp_path):
    readme, kernel = tmp_path / "README.md", tmp_path / "kernel.md"
    shutil.copy(README, readme)
    shutil.copy(ROOT / "docs" / "kernel.md", kernel)
    readme.chmod(0o644)
    args = [sys.executable, str(ROOT / "scripts" / "readme_numbers.py"), "--readme", str(readme),
            "--kernel-doc", str(kernel)]

    def run(*extra):
        return subprocess.run(args + list(extra), capture_output=True, text=True, timeout=60)

    assert run("--check").returncode == 0
    good = readme.read_text(encoding="utf-8")
    readme.write_text(good.replace("| `ar` | 1.00x |", "| `ar` | 9.99x |"), encoding="utf-8")
    out = run("--check")
    assert out.returncode == 1 and "readme_numbers.py" in out.stderr and "9.99x" in readme.read_text()
    assert run().returncode == 0 and readme.read_text(encoding="utf-8") == good
    assert readme.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md", "kernel.md"]  # no temporary left
    readme.write_text("no markers here\n", encoding="utf-8")
    out = run()
    assert out.returncode == 2 and "bench:start" in out.stderr and readme.read_text() == "no markers here\n"


# ---------------------------------------------------------------- links and anchors

FENCE = re.compile(r"^(```|~~~)")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"`+[^`]*`+")


def prose(path: Path) -> list[str]:
    """The file's lines outside fenced and indented code blocks (front matter dropped)."""
    lines, out, fenced = path.read_text(encoding="utf-8").splitlines(), [], False
    if lines and lines[0] == "---":
        lines = lines[lines.index("---", 1) + 1:]
    for line in lines:
        if FENCE.match(line.strip()):
            fenced = not fenced
        elif not fenced and not line.startswith("    "):
            out.append(line)
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = INLINE_CODE.sub(lambda m: m.group(0).strip("`"), heading.strip().lstrip("#").strip())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in prose(path):
        if re.match(r"#{1,6} ", line):
            base = slug(line)
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[str]:
    return [m.group(1) for line in prose(path) for m in LINK.finditer(INLINE_CODE.sub("", line))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if ROOT not in dest.parents and dest != ROOT:
            broken.append(f"{target}: outside the repository")
        elif not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


REPO_PATH = re.compile(r"^(?:paradec|ui|views|pages|scripts|tests|tools|assets|docs|deploy)/[\w.-][\w./-]*$")


def named_paths(path: Path) -> list[str]:
    """Repository paths the page names in code spans (`paradec/cpu/fast.py`), placeholders (NAME) left out."""
    out = []
    for span in re.findall(r"`([^`]+)`", path.read_text(encoding="utf-8")):
        for word in re.split(r"[\s,;()]+", span):
            word = word.rstrip(".:")
            if REPO_PATH.match(word) and not re.search(r"[A-Z]{3,}|\*", word):
                out.append(word)
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_file_a_page_names_exists(page):
    """Modules move; the docs move with them. `ui/narrate.lesson` names a function of ui/narrate.py."""
    missing = [p for p in named_paths(page)
               if not (ROOT / p).exists() and not (ROOT / p.rsplit(".", 1)[0]).with_suffix(".py").is_file()]
    assert not missing, f"{page.relative_to(ROOT)} names files that are not there: {sorted(set(missing))}"


def test_the_link_checker_reads_markdown_as_github_does(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# A page\n\n## Metrics (one definition everywhere)\n\n## `bench`, its file\n\n## Again\n\n"
                    "## Again\n\nSee [m](#metrics-one-definition-everywhere), ![i](x.png), `[no](code.md)`,\n"
                    "[b](#bench-its-file) [a](#again-1).\n\n    [indented](code.md)\n```\n[fenced](code.md)\n```\n")
    assert links(page) == ["#metrics-one-definition-everywhere", "x.png", "#bench-its-file", "#again-1"]
    assert {"metrics-one-definition-everywhere", "bench-its-file", "again", "again-1"} <= anchors(page)


# ---------------------------------------------------------------- no clock times, dates or tracker numbers

@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_docs_carry_no_clock_times_dates_or_issue_numbers(page):
    lines = page.read_text(encoding="utf-8").splitlines()
    hits = [f"{n}: {line.strip()[:90]}" for n, line in enumerate(lines, 1)
            if clock_times(line) or DATE.search(line) or issue_refs(line)]
    assert not hits, f"{page.relative_to(ROOT)} (say what was measured and name its file):\n" + "\n".join(hits)


def comments_and_docstrings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment and every module, class or function docstring of a Python file."""
    source = path.read_text(encoding="utf-8")
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.string))
        tree = ast.parse(source)
    except (SyntaxError, tokenize.TokenError):  # a file mid-edit: its comment lines at least
        return out or [(n, line) for n, line in enumerate(source.splitlines(), 1) if line.lstrip().startswith("#")]
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                out += [(first.lineno + i, line) for i, line in enumerate(first.value.value.splitlines())]
    return out


def python_files() -> list[Path]:
    files = [ROOT / f for f in CODE_FILES if (ROOT / f).is_file()]
    for d in CODE_DIRS:
        files += sorted(p for p in (ROOT / d).rglob("*.py") if "__pycache__" not in p.parts)
    return files


def test_comments_and_docstrings_carry_no_clock_times_or_issue_numbers():
    hits = []
    for path in python_files():
        for n, text in comments_and_docstrings(path):
            if clock_times(text) or issue_refs(text):
                hits.append(f"{path.relative_to(ROOT)}:{n}: {text.strip()[:90]}")
    assert not hits, "say what the code does, not when or for which ticket:\n" + "\n".join(hits)
