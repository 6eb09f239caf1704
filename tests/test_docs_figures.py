"""One set of numbers: a figure docs/app.md keeps is the one in the file it names (a re-recorded asset
that changes it fails here, so the doc is fixed with it); the doc types no run result (τ, speedup, rate)
the pages already draw from assets; the pages' texts quote the shipped files, and the Arena, the
Benchmark and the Roofline pages say how their numbers relate."""
import json
import re
import struct
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from helpers import APP

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "app.md"
NUMBER = r"([0-9][0-9,]*)"


def _json(path: str) -> dict:
    return json.loads((ROOT / path).read_text())


def _safetensors_shape(path: str, tensor: str) -> list[int]:
    """A tensor's shape from a safetensors file's JSON header (no torch needed)."""
    with open(ROOT / path, "rb") as f:
        return json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))[tensor]["shape"]


EARLY_EXIT = "assets/drafters/early-exit-smollm2/stats.json"
SPS_DRAFT = "assets/drafters/sps-smollm2/model.safetensors"
FORWARD_COST = "assets/traces/forward_cost.json"
# (the doc's words, {} for each figure; the file the doc names beside them; the figures read from that file)
CLAIMS = [
    ("the plain early exit at layers {}, {} and {}, the adapter at layer {}", EARLY_EXIT,
     lambda: [*sorted(map(int, _json(EARLY_EXIT)["plain_exit"])), _json(EARLY_EXIT)["exit_layer"]]),
    ("a {}-token LM-head subset", SPS_DRAFT, lambda: _safetensors_shape(SPS_DRAFT, "subset_ids")),
    ("one forward over {} to {} tokens at both precisions (on {} threads", FORWARD_COST,
     lambda: [_json(FORWARD_COST)["tokens"][0], _json(FORWARD_COST)["tokens"][-1], _json(FORWARD_COST)["threads"]]),
    ("median of {}", FORWARD_COST, lambda: [len(_json(FORWARD_COST)["curves"]["paradec"]["all_ms"][0])]),
]
# Decimals that are no run result: model names, AR's τ by definition, a link's example, the player's speeds
NOT_RESULTS = [r"[A-Za-z-]\d+\.\d+[-A-Za-z]", r"τ = 1\.00", r"temperature=0\.7", r"0\.5 to 4 steps/s"]


def doc_text() -> str:
    return " ".join(DOC.read_text(encoding="utf-8").split())  # the doc wraps its lines anywhere


def figures_in(text: str, words: str) -> list[int]:
    pattern = r"\s+".join(map(re.escape, words.split())).replace(re.escape("{}"), NUMBER)
    found = re.search(pattern, text)
    assert found, f"docs/app.md no longer says: {words!r} (update CLAIMS with the doc)"
    return [int(g.replace(",", "")) for g in found.groups()]


@pytest.mark.parametrize("words, path, read", CLAIMS, ids=[c[0].split("{}")[0].strip() for c in CLAIMS])
def test_a_figure_the_doc_keeps_is_the_files(words, path, read):
    text = doc_text()
    assert path in text or str(Path(path).parent) in text, f"docs/app.md should name {path} beside {words!r}"
    assert figures_in(text, words) == read(), f"docs/app.md disagrees with {path}"


def test_the_doc_types_no_run_result():
    text = doc_text()
    for allowed in NOT_RESULTS:
        text = re.sub(allowed, "", text)
    typed = re.findall(r".{30}(?:\d+\.\d+|\d+ ?%).{10}", text)
    assert not typed, f"a τ, speedup or rate typed in docs/app.md: draw it from assets on its page instead: {typed}"


def open_page(page: str, **query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params.update(query)
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def markdown(at: AppTest) -> str:
    return " ".join(" ".join(m.value.split()) for m in at.markdown)


def test_the_arena_and_the_benchmark_say_why_their_winners_differ():
    from ui import bench, sources

    runs, report = sources.arena(), bench.main_report()
    pld = runs["pld"].speedup_over(runs["ar"])
    best = max((m for m in report["methods"] if m != "ar"), key=lambda m: report["methods"][m]["speedup"])
    arena = markdown(open_page("views/arena.py"))
    assert "**Benchmark** page" in arena and "the task decides" in arena
    assert f"{pld:.2f}×" in arena and f"{best} is the fastest ({report['methods'][best]['speedup']:.2f}×)" in arena
    benchmark = markdown(open_page("views/benchmark.py"))
    assert "**Arena** page" in benchmark and f"({pld:.2f}×)" in benchmark
    assert all(cat.replace("_", " ") in benchmark for cat in report["categories"])  # each task's fastest named


def test_the_roofline_table_reads_the_arenas_runs_and_their_tau():
    from ui import sources

    table = open_page("views/roofline.py").dataframe[0].value
    runs = sources.arena()
    for _, row in table.iterrows():
        assert row["τ (FROM RUN)"] == round(runs[row["method"]].tau, 2), row["method"]  # the Arena's τ
    pld = table.set_index("method").loc["pld"]
    assert pld["τ after the prefill"] > pld["τ (FROM RUN)"]  # the model's τ leaves the prefill step out


@pytest.mark.parametrize("page, method", [("views/sps.py", "sps"), ("views/lookahead.py", "lookahead")])
def test_method_pages_quote_the_main_benchmark(page, method):
    from ui import bench

    m = bench.main_report()["methods"][method]
    at = open_page(page)
    text = markdown(at) + " ".join(" ".join(a.value.split()) for a in at.info)
    assert f"{m['speedup']:.2f}×" in text and f"τ {m['tau']:.2f}" in text
