"""Make assets/bench/vllm-format-example.json: the Production engine page's shipped example, for
when no GPU machine runs a real vLLM. paradec's side is real (the embedded model, EAGLE-3, held-out
Spec-Bench prompts); the engine's side is tools/standin_engine.py, which answers in vLLM's formats
with made-up acceptance counts, so the file is labelled a format example wherever it is shown.

    .venv/bin/python scripts/record_production_example.py
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from paradec import bench_report  # noqa: E402
from paradec.cli import main  # noqa: E402
from tools.standin_engine import Running, StandIn  # noqa: E402

OUT = ROOT / "assets" / "bench" / "vllm-format-example.json"
LABEL = ("Format example: the vllm rows come from tools/standin_engine.py, a stand-in that answers in vLLM's "
         "formats (per-request metrics, detailed; Prometheus counters) with made-up acceptance counts and sleeps "
         "20 ms a forward, not from a real vLLM. paradec's rows are real runs on this CPU. Run the README's commands "
         "on a GPU machine for a real comparison.")
ACCEPTS = (3, 1, 4, 0, 2, 4, 1, 3, 0, 2, 4, 2)  # k = 4, falling off by position as a real drafter's does


def record() -> None:
    engine, baseline = StandIn(model="meta-llama/Llama-3.1-8B-Instruct", k=4, accepts=ACCEPTS, per_request="detailed",
                               step_ms=20), StandIn(model="meta-llama/Llama-3.1-8B-Instruct", spec=False, step_ms=20)
    with Running(engine) as e, Running(baseline) as b:
        code = main(["bench", "--methods", "eagle3", "--split", "heldout", "--per-category", "1", "--limit", "3",
                     "--max-new-tokens", "48", "--threads", "1", "--out", str(OUT),
                     "--peers", f"vllm={e.url},method=eagle3,baseline={b.url}"])
    if code:
        raise SystemExit(code)
    report = bench_report.load(OUT)
    report["example"] = LABEL
    for section in report["engines"].values():
        section["url"] = section["baseline"] = "http://127.0.0.1 (tools/standin_engine.py)"
    bench_report.save(report, OUT)


if __name__ == "__main__":
    record()
