"""The README's bench table (and docs/kernel.md's forward-cost table), drawn from the files that
`make bench` and `make traces` write, never typed.

    python scripts/readme_numbers.py           # rewrite the generated blocks
    python scripts/readme_numbers.py --check   # exit 1 when a block is not what its file gives; write nothing

README.md's block lies between `<!-- bench:start -->` and `<!-- bench:end -->`: one row per method of
assets/bench/cpu-2core.json (AR first, then paradec's methods, then Hugging Face's peers, each by
speed-up), and one line naming the file, its prompts, tokens and machine. docs/kernel.md's lies between
`<!-- forward-cost:start -->` and `<!-- forward-cost:end -->`: assets/traces/forward_cost.json's curves.
docs/architecture.md's lies between `<!-- methods:start -->` and `<!-- methods:end -->`: where each method lives,
from paradec.catalog. Standard library only (the catalogue is too), so it runs before the install (and in the fast
tests, without torch).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BENCH = "assets/bench/cpu-2core.json"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"
KERNEL_DOC = ROOT / "docs" / "kernel.md"
FORWARD_COST = "assets/traces/forward_cost.json"
COST_MARKERS = ("<!-- forward-cost:start -->", "<!-- forward-cost:end -->")
ARCHITECTURE_DOC = ROOT / "docs" / "architecture.md"
METHOD_MARKERS = ("<!-- methods:start -->", "<!-- methods:end -->")


def _num(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _acceptance_field(report: dict) -> str:
    """The acceptance the file holds: `acceptance` (accepted ÷ tested drafts, from schema 2) or, in an
    older file, `acceptance_rate` (accepted ÷ drafted tokens), named as the file names it."""
    rows = report["methods"].values()
    return "acceptance" if any("acceptance" in r for r in rows) else "acceptance_rate"


def _order(methods: dict) -> list[str]:
    """AR, then paradec's methods by speed-up, then the peers (rows without a τ: Hugging Face's, an engine's)."""
    def by_speed(names):
        return sorted(names, key=lambda m: (-(methods[m].get("speedup") or 0.0), m))
    ours = [m for m in methods if m != "ar" and methods[m].get("tau") is not None]
    peers = [m for m in methods if m != "ar" and methods[m].get("tau") is None]
    return (["ar"] if "ar" in methods else []) + by_speed(ours) + by_speed(peers)


def _machine(m: dict) -> str:
    where = m.get("gpu") or f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores"
    return (f"{where}, {m.get('torch_threads', '?')} torch threads, {m.get('device', '?')} "
            f"{m.get('dtype', '?')}, torch {m.get('torch', '?')}")


def block(report: dict, source: str = BENCH) -> str:
    """The markdown between the markers, from one results file's report."""
    methods = report["methods"]
    field = _acceptance_field(report)
    lines = [f"| method | speed-up vs AR | τ | {field} | identical to AR | tokens/s |",
             "|---|---|---|---|---|---|"]
    for name in _order(methods):
        r = methods[name]
        speedup = "-" if r.get("speedup") is None else f"{r['speedup']:.2f}x"
        same = f"{r['identical_runs']}/{r['runs']}" if r.get("runs") else "-"
        lines.append(f"| `{name}` | {speedup} | {_num(r.get('tau'), '.2f')} | {_num(r.get(field), '.2f')} "
                     f"| {same} | {_num(r.get('tokens_per_s'), '.1f')} |")
    split = f", split {report['split']}" if report.get("split") else ""
    per_cat = f", {report['per_category']} per category" if report.get("per_category") else ""
    sampling = "greedy" if not report.get("temperature") else f"temperature {report['temperature']}"
    repeats = report.get("repeats") or 1
    decoded = "each decoded once" if repeats == 1 else f"each decoded {repeats} times"
    line = (f"From `{source}`: {report.get('prompts', '?')} prompts (`{report.get('prompt_file', '?')}`{split}"
            f"{per_cat}), {report.get('max_new_tokens', '?')} new tokens, {sampling}, {decoded} per method; "
            f"{_machine(report.get('machine', {}))}.")
    peer = methods.get("hf_generate", {}).get("speedup")
    if peer:
        line += f" paradec's AR decodes {1 / peer:.2f}x as fast as `hf_generate` on the same prompts."
    return "\n".join(lines + ["", line])


def cost_block(cost: dict, source: str = FORWARD_COST) -> str:
    """The forward pass's measured cost by tokens in the pass: paradec's forward and Hugging Face's."""
    tokens = cost["tokens"]
    lines = ["| tokens in the pass | " + " | ".join(map(str, tokens)) + " |", "|---" * (len(tokens) + 1) + "|"]
    repeats = set()
    for name, curve in cost["curves"].items():
        ms = curve["median_ms"]
        repeats.update(len(r) for r in curve.get("all_ms", []))
        lines.append(f"| {name}, ms | " + " | ".join(f"{x:.1f}" for x in ms) + " |")
        lines.append(f"| {name}, × its 1-token pass | " + " | ".join(f"{x / ms[0]:.2f}" for x in ms) + " |")
    median = f", median of {max(repeats)}" if repeats else ""
    line = (f"From `{source}`: {cost.get('model', '?')}, {cost.get('device', '?')} {cost.get('dtype', '?')}, "
            f"{cost.get('threads', '?')} threads, after {cost.get('context_tokens', '?')} cached tokens{median}.")
    return "\n".join(lines + ["", line])


def methods_block() -> str:
    """Where each method lives: its drafter, its page, what it needs and records, from its description."""
    sys.path.insert(0, str(ROOT))
    from paradec import catalog

    rows = ["| method | drafter | page | family | needs | GPU preset model | step record |",
            "|---|---|---|---|---|---|---|"]
    for m in catalog.METHODS.values():
        module, _, cls = m.drafter.partition(":")
        file = module.replace(".", "/") + ".py" if "." in module else f"paradec/drafters/{module}.py"
        view = f"views/{m.page}.py"
        page = f"`{view}` (/{m.page})" if (ROOT / view).is_file() else f"generic (/{m.page})"
        record = f"`{m.record.__name__}`" if m.record else "-"
        rows.append(f"| `{m.name}` | `{file}` `{cls}` | {page} | {m.family} | {m.needs or '-'} | {m.uses or '-'} "
                    f"| {record} |")
    return "\n".join([*rows, "", "Generated from `paradec/catalog.py` by `scripts/readme_numbers.py`."])


def render(text: str, body: str, markers: tuple[str, str] = (START, END), name: str = "README.md") -> str:
    """text with the block between the markers replaced by body."""
    start, end = markers
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise ValueError(f"{name} needs one {start} and, after it, one {end}")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body}\n{end}{tail}"


def _source(path: Path) -> str:
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return path.name


def expected(readme: Path = README, bench: Path | None = None) -> str:
    """What README.md should read, given the results file."""
    bench = bench or ROOT / BENCH
    report = json.loads(bench.read_text(encoding="utf-8"))
    return render(readme.read_text(encoding="utf-8"), block(report, _source(bench)))


def expected_kernel_doc(doc: Path = KERNEL_DOC, cost: Path | None = None) -> str:
    """What docs/kernel.md should read, given the forward-cost file."""
    cost = cost or ROOT / FORWARD_COST
    data = json.loads(cost.read_text(encoding="utf-8"))
    return render(doc.read_text(encoding="utf-8"), cost_block(data, _source(cost)), COST_MARKERS, doc.name)


def expected_architecture_doc(doc: Path = ARCHITECTURE_DOC) -> str:
    """What docs/architecture.md should read, given the catalogue."""
    return render(doc.read_text(encoding="utf-8"), methods_block(), METHOD_MARKERS, doc.name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a block differs; write nothing")
    ap.add_argument("--readme", type=Path, default=README)
    ap.add_argument("--bench", type=Path, default=ROOT / BENCH)
    ap.add_argument("--kernel-doc", type=Path, default=KERNEL_DOC)
    ap.add_argument("--forward-cost", type=Path, default=ROOT / FORWARD_COST)
    args = ap.parse_args(argv)
    try:
        targets = [(args.readme, expected(args.readme, args.bench), args.bench),
                   (args.kernel_doc, expected_kernel_doc(args.kernel_doc, args.forward_cost), args.forward_cost),
                   (ARCHITECTURE_DOC, expected_architecture_doc(), ROOT / "paradec" / "catalog.py")]
    except (OSError, ValueError, KeyError, TypeError, IndexError, ZeroDivisionError) as e:
        print(f"readme_numbers: error: {e}", file=sys.stderr)
        return 2
    stale = [(path, new, source) for path, new, source in targets if new != path.read_text(encoding="utf-8")]
    if args.check:
        for path, _, source in stale:
            print(f"readme_numbers: {path.name}'s table differs from {source.name}: "
                  "run python scripts/readme_numbers.py", file=sys.stderr)
        return 1 if stale else 0
    sys.path.insert(0, str(ROOT))
    from paradec.traces.files import write_atomic  # the project's one way to write a file: standard library only

    for path, new, _ in stale:
        write_atomic(path, new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
