"""Benchmark results: the per-method and per-category metrics, the printed table, and the
results file (JSON, with a CSV beside it) that the Benchmark page reads.

Standard library only: the app loads results files without torch."""
from __future__ import annotations

import csv
import json
from pathlib import Path

from .trace import speedup

SCHEMA = 1
KIND = "paradec-bench"
METRICS = ("speedup", "tau", "acceptance_rate", "tokens_per_s", "identical_runs", "runs")
MAX_BYTES = 20 * 2**20
# A top-2 logit gap below this is a near-tie that float32's summation order may break either way
# (a 1-token and an N-token forward differ by ~1e-7 relative; logits here are ~10-30).
NEAR_TIE = 1e-4
TIMED = ("each step's propose, verify pass, acceptance, KV-cache compaction and commit (paradec's methods); "
         "the whole generate() call (Hugging Face's peers); not the trace's bookkeeping")


class ResultsError(ValueError):
    """A file that is not a paradec benchmark results file; the message is for the user."""


def metrics(recs: list, ar: list) -> dict:
    """recs and ar: [(prompt row, record)] in the same prompt and repeat order."""
    tokens = sum(len(r["tokens"]) for _, r in recs)
    wall = sum(r["wall_s"] for _, r in recs)
    tps = tokens / max(1e-9, wall)
    forwards = [r["forwards"] for _, r in recs]
    drafted = sum(r["drafted"] for _, r in recs)
    return {
        "speedup": round(speedup(tokens, wall, sum(len(r["tokens"]) for _, r in ar), sum(r["wall_s"] for _, r in ar)), 3),
        "tau": round(tokens / sum(forwards), 3) if None not in forwards else None,
        "acceptance_rate": round(sum(r["accepted"] for _, r in recs) / drafted, 3) if drafted else 0.0,
        "tokens_per_s": round(tps, 2),
        "identical_runs": sum(r["tokens"] == a["tokens"] for (_, r), (_, a) in zip(recs, ar)),
        "runs": len(recs),
        "acceptance_by_position": _positions([r["positions"] for _, r in recs]),
    }


def _positions(per_run: list) -> list[list]:
    """[depth, drafted, reached, share] summed over runs (a run's list is Trace.by_position();
    peers report none)."""
    drafted, reached = {}, {}
    for rows in per_run:
        for d, n, r in rows or []:
            drafted[d] = drafted.get(d, 0) + n
            reached[d] = reached.get(d, 0) + r
    return [[d, drafted[d], reached[d], round(reached[d] / drafted[d], 3)] for d in sorted(drafted)]


def aggregate(runs: dict, rows: list[dict], header: dict) -> dict:
    """The report: header fields, then metrics per method and per category and method."""
    cats = sorted({r["category"] for r in rows})
    report = {"schema": SCHEMA, "kind": KIND, **header, "prompts": len(rows),
              "methods": {n: metrics(recs, runs["ar"]) for n, recs in runs.items()}, "categories": {}}
    for c in cats:
        report["categories"][c] = {
            n: metrics([x for x in recs if x[0]["category"] == c], [x for x in runs["ar"] if x[0]["category"] == c])
            for n, recs in runs.items()
        }
    return report


def format_report(report: dict) -> str:
    lines = [f"model {report['model']}  draft {report['draft']}  prompts {report['prompts']}  "
             f"max_new_tokens {report['max_new_tokens']}  device {report['machine']['device']}",
             ""]
    w = max(18, *(len(n) + 2 for n in report["methods"]))  # a method with settings has a long label
    lines[-1] = f"{'method':<{w}}{'speedup':>9}{'tau':>7}{'accept':>8}{'tok/s':>8}{'identical':>11}"
    for name, m in report["methods"].items():
        tau = f"{m['tau']:.2f}" if m["tau"] is not None else "-"
        lines.append(f"{name:<{w}}{m['speedup']:>8.2f}x{tau:>7}{m['acceptance_rate']:>8.2f}"
                     f"{m['tokens_per_s']:>8.1f}{m['identical_runs']:>6}/{m['runs']}")
    lines += ["", f"speedup = method tokens/s / AR tokens/s, same prompts, same process; timed: {report.get('timed', '?')}"]
    for d in report.get("differences", []):
        why = "expected: another model" if d["expected"] else ("a near-tie" if d["top2_gap"] < NEAR_TIE else "NOT a tie")
        lines.append(f"differs from AR: {d['method']} on prompt {d['prompt']} ({d['category']}) at token {d['position']}:"
                     f" {d['token']} for AR's {d['ar_token']}, top-2 logit gap {d['top2_gap']:.2e} ({why})")
    return "\n".join(lines)


def csv_rows(report: dict) -> list[dict]:
    """One row per method overall (category 'all'), then per category and method."""
    groups = [("all", report["methods"])] + list(report["categories"].items())
    return [{"category": cat, "method": name, **{k: m[k] for k in METRICS},
             "acceptance_by_position": " ".join(f"{share:.3f}" for *_, share in m["acceptance_by_position"])}
            for cat, methods in groups for name, m in methods.items()]


def save(report: dict, path: str | Path) -> Path:
    """Write PATH (JSON) and PATH with .csv; returns the CSV's path. OSError if unwritable."""
    path = Path(path)
    path.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    out = path.with_suffix(".csv")
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["category", "method", *METRICS, "acceptance_by_position"])
        w.writeheader()
        w.writerows(csv_rows(report))
    return out


def load(path: str | Path) -> dict:
    """A results file, checked enough that the page can draw it."""
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read(MAX_BYTES + 1))
    except OSError as e:
        raise ResultsError(f"cannot read {path}: {e.strerror}") from None
    except (ValueError, RecursionError) as e:
        raise ResultsError(f"{path}: not JSON ({e})") from None
    if not isinstance(data, dict) or data.get("kind") != KIND or data.get("schema") != SCHEMA:
        raise ResultsError(f"{path}: not a paradec benchmark results file of schema {SCHEMA}")
    for group in [data.get("methods"), *(data.get("categories") or {}).values()]:
        if not isinstance(group, dict) or "ar" not in group:
            raise ResultsError(f"{path}: every group of results needs AR, the baseline")
        if any(not isinstance(m, dict) or not set(METRICS) <= set(m) for m in group.values()):
            raise ResultsError(f"{path}: a method's results lack {', '.join(METRICS)}")
    return data
