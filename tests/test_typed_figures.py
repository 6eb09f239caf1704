"""No page's prose types a measured figure: a speed-up, a τ, a share, a time or a count of tokens in a page's text
comes from the file that measured it (ui/figures.py reads them), so a new benchmark or trained drafter changes the
text with it. A figure that is not measured (a definition, a setting, a claim about other hardware that a page
then checks) sits on a line marked `# not measured: why`."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEASURED = re.compile(r"\d+(?:\.\d+)?\s?%|\d+(?:\.\d+)?k tokens|\d+\.\d+\s?[x×]|τ\s?(?:=|of|≈)?\s?\d\.\d+"
                      r"|\d+(?:\.\d+)?\s?(?:ms|tokens/s|GB/s|GFLOP/s)\b")
PLACEHOLDER = re.compile(r"\{[^{}]*\}")  # {speedup:.2f}×: the figure comes from a file


def typed(source: str) -> list[tuple[int, str]]:
    """(line, figure) for every measured-looking figure typed in a string the app shows (_() or N_())."""
    lines, found = source.splitlines(), []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("_", "N_")):
            continue
        for arg in node.args:
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                continue
            marked = any("# not measured" in lines[n - 1] for n in range(node.lineno, arg.end_lineno + 1))
            found += [(node.lineno, m.group(0)) for m in MEASURED.finditer(PLACEHOLDER.sub("", arg.value))
                      if not marked]
    return found


def test_no_page_types_a_measured_figure():
    hits = {str(p.relative_to(ROOT)): typed(p.read_text()) for p in sorted([*ROOT.glob("views/*.py"),
                                                                            *ROOT.glob("ui/*.py")])}
    assert not {k: v for k, v in hits.items() if v}


def test_the_check_finds_a_typed_figure_and_spares_a_placeholder():
    assert typed('x = _("its token is the target\'s 37% of the time, on 452k tokens, 1.4× AR, τ 1.45")') == [
        (1, "37%"), (1, "452k tokens"), (1, "1.4×"), (1, "τ 1.45")]
    assert typed('x = _("the target\'s {alpha:.0%} of the time, {speedup}× AR")') == []
    assert typed('x = _("τ = 1.00 by definition")  # not measured: AR\'s τ is one token per pass') == []
