"""Benchmark results: the per-method and per-category metrics, the printed table, and the
results file (JSON, with a CSV beside it) that the Benchmark page reads.

Standard library only: the app loads results files without torch."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from . import bench_batch
from .traces.files import write_atomic
from .traces.trace import Trace, TraceError, speedup, tokens_per_forward

SCHEMA = 2  # 2: acceptance over tested drafts beside drafted_accepted (schema 1: acceptance_rate, the latter alone)
KIND = "paradec-bench"
METRICS = ("speedup", "tau", "acceptance", "drafted_accepted", "tokens_per_s", "identical_runs", "runs")
MAX_BYTES = 20 * 2**20
# paradec.bench_memory's split, bytes: weights by owner, the target's KV cache at the widest pass, what the run holds
# between steps, a step's activations, and the peak (weights + the run's highest allocation)
MEMORY_FIELDS = ("weights_target", "weights_packed", "weights_draft", "weights_heads", "kv", "held", "activations",
                 "peak")
# A top-2 logit gap below this is a near-tie that float32's summation order may break either way
# (a 1-token and an N-token forward differ by ~1e-7 relative; logits here are ~10-30).
NEAR_TIE = 1e-4
TIMED = ("each step's propose, verify pass, acceptance, KV-cache compaction and commit (paradec's methods); "
         "the whole generate() call (Hugging Face's peers); llama.cpp's generate loop in its worker process, from the "
         "prompt's ids to the last token (llamacpp); not the trace's bookkeeping. tokens_per_s: end to end, the "
         "prompt's pass included; decode_tokens_per_s: after it (the first step and its tokens left out)")


class ResultsError(ValueError):
    """A file that is not a paradec benchmark results file; the message is for the user."""


TORCH_AR = "ar_torch"  # AR on paradec's float32 forward with torch's products: the row a slow kernel cannot hide behind


def fastest_ar(report: dict) -> str:
    """The faster of AR (paradec's kernel) and ar_torch in a report: what a speed-up should be measured against."""
    rows = report["methods"]
    if TORCH_AR in rows and rows[TORCH_AR]["tokens_per_s"] > rows["ar"]["tokens_per_s"]:
        return TORCH_AR
    return "ar"


def speedup_over_fastest_ar(report: dict, name: str) -> float:
    """A row's speed-up against the faster AR (fastest_ar): its speedup when that is paradec's AR, else scaled by
    AR's tokens/s over ar_torch's. The app's pages read this."""
    rows = report["methods"]
    base = rows[fastest_ar(report)]["tokens_per_s"]
    return round(rows[name]["speedup"] * rows["ar"]["tokens_per_s"] / base, 3) if base else 0.0


def without_kernel(report: dict) -> float | None:
    """What decoding without paradec's kernel costs, measured: ar_torch's tokens/s over AR's (0.5: half the
    speed); None when the report has no ar_torch row."""
    rows = report.get("methods", {})
    if TORCH_AR not in rows or not rows.get("ar", {}).get("tokens_per_s"):
        return None
    return rows[TORCH_AR]["tokens_per_s"] / rows["ar"]["tokens_per_s"]


def record(t: Trace) -> dict:
    """A paradec run as the metrics read it (bench's runs, the Production engine page's live run)."""
    first = t.steps[0] if t.steps else None  # the step whose verify pass runs the prompt
    return {"tokens": t.token_ids, "prompt_ids": t.prompt_ids, "wall_s": t.wall_s, "forwards": t.target_forwards,
            "drafted": t.drafted, "tested": t.tested, "accepted": t.accepted_drafts, "positions": t.by_position(),
            "first_s": (first.draft_ms + first.verify_ms) / 1e3 if first else 0.0,
            "first_tokens": len(first.tokens) if first else 0}


def metrics(recs: list, ar: list | None, same: list | None = None) -> dict:
    """recs and ar: [(prompt row, record)] in the same prompt and repeat order; an engine peer's runs
    are measured against its baseline URL's (None: it has none). same: the runs whose tokens identical_runs
    compares with (default ar's; a peer's speculation: its own AR's)."""
    if recs and "engine" in recs[0][1]:
        return engine_metrics(recs, ar)
    same = ar if same is None else same
    tokens = sum(len(r["tokens"]) for _, r in recs)
    wall = sum(r["wall_s"] for _, r in recs)
    tps = tokens / max(1e-9, wall)
    forwards = [r["forwards"] for _, r in recs]
    drafted, accepted = sum(r["drafted"] for _, r in recs), sum(r["accepted"] for _, r in recs)
    tested = sum(r.get("tested", 0) for _, r in recs)  # a peer's record tests nothing
    return {
        "speedup": round(speedup(tokens, wall, sum(len(r["tokens"]) for _, r in ar),
                                 sum(r["wall_s"] for _, r in ar)), 3),
        "tau": round(tokens_per_forward(tokens, sum(forwards)), 3) if None not in forwards else None,
        "acceptance": _ratio(accepted, tested),
        "drafted_accepted": _ratio(accepted, drafted),
        "tokens_per_s": round(tps, 2),
        "decode_tokens_per_s": after_prompt([r for _, r in recs]),
        "identical_runs": sum(r["tokens"] == a["tokens"] for (_, r), (_, a) in zip(recs, same)),
        "runs": len(recs),
        "acceptance_by_position": _positions([r["positions"] for _, r in recs]),
    }


def after_prompt(recs: list[dict]) -> float | None:
    """Tokens/s after the prompt's pass: the tokens of every step but the first over the time after it (None for
    runs that do not time their first step apart: Hugging Face's generate())."""
    if not recs or any(r.get("first_s") is None for r in recs):
        return None
    tokens = sum(len(r["tokens"]) - r["first_tokens"] for r in recs)
    return round(tokens / max(1e-9, sum(r["wall_s"] - r["first_s"] for r in recs)), 2)


def engine_metrics(recs: list, base: list | None) -> dict:
    """A production engine's requests (paradec.production): its tokens/s over its baseline URL's on the
    same prompts (None without a baseline; identical_runs compares their texts), τ from the engine's own
    counts of verify steps and accepted drafts (1.00 for a baseline: it drafts nothing), None where it
    reports no counts (SGLang: see the report's engines section)."""
    tokens = sum(r["completion_tokens"] for _, r in recs)
    wall = sum(r["wall_s"] for _, r in recs)
    counted = all(r["drafts"] is not None for _, r in recs)
    drafts, drafted, accepted = (sum(r[k] or 0 for _, r in recs) for k in ("drafts", "draft_tokens", "accepted"))
    tested = None if any(r.get("tested") is None for _, r in recs) else sum(r["tested"] for _, r in recs)
    return {
        "speedup": round(speedup(tokens, wall, sum(r["completion_tokens"] for _, r in base),
                                 sum(r["wall_s"] for _, r in base)), 3) if base else None,
        # no drafts counted: every forward was a plain one-token step (a baseline's)
        "tau": round(tokens_per_forward(drafts + accepted, drafts) if drafts else 1.0, 3) if counted and recs else None,
        "acceptance": _ratio(accepted, tested) if counted and tested is not None else None,
        "drafted_accepted": _ratio(accepted, drafted) if counted else None,
        "tokens_per_s": round(tokens / max(1e-9, wall), 2),
        "identical_runs": sum(r["text"] == b["text"] for (_, r), (_, b) in zip(recs, base)) if base else None,
        "runs": len(recs),
        "acceptance_by_position": _positions([r["positions"] for _, r in recs]),
    }


def _ratio(accepted: int, of: int) -> float | None:
    """accepted / of, rounded; None when nothing was drafted (AR, a baseline, a peer): no acceptance."""
    return round(accepted / of, 3) if of else None


def _against(name: str, runs: dict) -> str | None:
    """Whose runs a row's speedup divides by: AR's, or for an engine peer its baseline URL's."""
    recs = runs[name]
    if not (recs and "engine" in recs[0][1]):
        return "ar"
    base = name if name.endswith("_baseline") else f"{name}_baseline"
    return base if base in runs else None


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
    against = {n: _against(n, runs) for n in runs}
    # whose tokens identical_runs compares with: a record may name them (a peer's speculation: its own AR)
    same = {n: (runs[n][0][1].get("reference") if runs[n] else None) or against[n] for n in runs}

    def of(name: str, cat: str | None) -> dict:
        def pick(who: str | None) -> list | None:
            return [x for x in runs[who] if cat in (None, x[0]["category"])] if who in runs else None
        return metrics(pick(name), pick(against[name]) or None, pick(same[name]) or None)

    report = {"schema": SCHEMA, "kind": KIND, **header, "prompts": len(rows),
              "methods": {n: of(n, None) for n in runs}, "categories": {c: {n: of(n, c) for n in runs} for c in cats}}
    return report


def format_report(report: dict) -> str:
    lines = [f"model {report['model']}  draft {report['draft']}  prompts {report['prompts']}  "
             f"max_new_tokens {report['max_new_tokens']}  device {report['machine']['device']}",
             ""]
    w = max(18, *(len(n) + 2 for n in report["methods"]))  # a method with settings has a long label
    lines[-1] = f"{'method':<{w}}{'speedup':>9}{'tau':>7}{'alpha':>8}{'tok/s':>8}{'after':>8}{'identical':>11}"
    for name, m in report["methods"].items():
        lines.append(f"{name:<{w}}{_shown(m['speedup'], '>8.2f')}x{_shown(m['tau'], '>7.2f')}"
                     f"{_shown(m.get('acceptance'), '>8.2f')}{m['tokens_per_s']:>8.1f}"
                     f"{_shown(m.get('decode_tokens_per_s'), '>8.1f')}{_shown(m['identical_runs'], '>6')}/{m['runs']}")
    lines += ["", "speedup = method tokens/s / AR tokens/s, same prompts, same process; alpha = accepted drafts / "
                  "tested ones (Trace.depth_acceptance); tok/s end to end, after = tokens/s after the prompt's pass; "
                  f"timed: {report.get('timed', '?')}"]
    lines += peer_lines(report)
    lines += bench_batch.lines(report)
    for name, e in report.get("engines", {}).items():
        lines.append(f"{name}: {e['kind']} at {e['url']}, model {e['model']}, method {e['method'] or '?'}; "
                     f"figures from {e['source']}; speedup against {name}_baseline, identical = same text as it")
        lines += [f"{name}: {note}" for note in e.get("notes", [])]
        if "accept_length_server_life" in e:
            lines.append(f"{name}: avg_spec_accept_length {e['accept_length_server_life']:.2f}, cumulative over the "
                         "server's life (not this run's alone)")
    lines += memory_lines(report)
    for d in report.get("differences", []):
        why = ("expected: another model" if d["expected"]
               else ("a near-tie" if d["top2_gap"] < NEAR_TIE else "NOT a tie"))
        lines.append(f"differs from AR: {d['method']} on prompt {d['prompt']} ({d['category']}) "
                     f"at token {d['position']}:"
                     f" {d['token']} for AR's {d['ar_token']}, top-2 logit gap {d['top2_gap']:.2e} ({why})")
    return "\n".join(lines)


def peer_lines(report: dict) -> list[str]:
    """A line per peer in a process of its own: what ran, whose text identical compares with, or why it is out."""
    out = []
    for name, p in report.get("peers", {}).items():
        if p.get("failure"):
            out.append(f"{name}: left out of the results: {p['failure']}")
            continue
        same = ", ".join(f"{row} against {ref}" for row, ref in p.get("identical_to", {}).items())
        out.append(f"{name}: {p.get('engine', '?')} ({p.get('library', '?')}) on {p.get('file', '?')}, "
                   f"{p.get('threads', '?')} threads; identical: {same}")
    return out


def memory_lines(report: dict) -> list[str]:
    """The memory table (MiB), one line per method with AR's first; [] for a report without one."""
    mem = report.get("memory", {}).get("methods")
    if not mem:
        return []
    w = max(18, *(len(n) + 2 for n in mem))
    heads = ("target", "packed", "draft", "heads", "kv", "held", "activ.", "peak")
    lines = ["", f"{'memory (MiB)':<{w}}" + "".join(f"{h:>9}" for h in heads) + f"{'vs AR':>8}"]
    ar = mem.get("ar", {}).get("peak")
    for name, m in mem.items():
        ratio = f"{m['peak'] / ar:>7.2f}x" if ar else f"{'-':>8}"
        lines.append(f"{name:<{w}}" + "".join(f"{m[f] / 2**20:>9.2f}" for f in MEMORY_FIELDS) + ratio)
    return lines + [f"memory: {report['memory']['how']}"]


def _shown(value, spec: str) -> str:
    """A number as the table prints it; "-" where there is none (a peer that reports no forwards)."""
    return format(value, spec) if value is not None else format("-", spec.split(".")[0])


def csv_rows(report: dict) -> list[dict]:
    """One row per method overall (category 'all'), then per category and method."""
    groups = [("all", report["methods"])] + list(report["categories"].items())
    mem = report.get("memory", {}).get("methods", {})
    return [{"category": cat, "method": name, **{k: m[k] for k in METRICS},
             "decode_tokens_per_s": m.get("decode_tokens_per_s"),
             "acceptance_by_position": " ".join(f"{share:.3f}" for *_, share in m["acceptance_by_position"]),
             **{f"{k}_mib": _mib(mem, name, k) if cat == "all" else None for k in MEMORY_FIELDS}}
            for cat, methods in groups for name, m in methods.items()]


def _mib(mem: dict, name: str, field: str):
    """A method's memory figure in MiB (None, an empty CSV cell, where none was measured: a peer, a category)."""
    return round(mem[name][field] / 2**20, 3) if name in mem else None


def save(report: dict, path: str | Path) -> Path:
    """Write PATH (JSON) and PATH with .csv; returns the CSV's path. OSError if unwritable."""
    path = Path(path)
    write_atomic(path, json.dumps(report, ensure_ascii=False, indent=1))
    text = io.StringIO(newline="")
    w = csv.DictWriter(text, fieldnames=["category", "method", *METRICS, "decode_tokens_per_s",
                                         "acceptance_by_position", *(f"{k}_mib" for k in MEMORY_FIELDS)])
    w.writeheader()
    w.writerows(csv_rows(report))
    write_atomic(path.with_suffix(".csv"), text.getvalue())
    return path.with_suffix(".csv")


def load(path: str | Path) -> dict:
    """A results file, checked enough that the page can draw it."""
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read(MAX_BYTES + 1))
    except OSError as e:
        raise ResultsError(f"cannot read {path}: {e.strerror}") from None
    except (ValueError, RecursionError) as e:
        raise ResultsError(f"{path}: not JSON ({e})") from None
    if not isinstance(data, dict) or data.get("kind") != KIND or data.get("schema") not in (1, SCHEMA):
        raise ResultsError(f"{path}: not a paradec benchmark results file of schema 1 to {SCHEMA}")
    groups = [data.get("methods"), *(data.get("categories") or {}).values()]
    if data["schema"] == 1:
        _upgrade(groups)
    for group in groups:
        if not isinstance(group, dict) or "ar" not in group:
            raise ResultsError(f"{path}: every group of results needs AR, the baseline")
        if any(not isinstance(m, dict) or not set(METRICS) <= set(m) for m in group.values()):
            raise ResultsError(f"{path}: a method's results lack {', '.join(METRICS)}")
    for name, m in data["methods"].items():  # by_batch: bench --batch's figures, in files that have them
        why = bench_batch.check(m["by_batch"]) if "by_batch" in m else ""
        if why:
            raise ResultsError(f"{path}: method {name}: {why}")
    _check_engines(data.get("engines", {}), path)
    _check_peers(data.get("peers", {}), path)
    return data


def _upgrade(groups: list) -> None:
    """Schema 1's methods read as schema 2's: its acceptance_rate was accepted / drafted tokens, so it is
    drafted_accepted (None where nothing was drafted); it counted no tested drafts, so acceptance is None
    (tested_counted says why). The caller checks the groups' shape after this."""
    for group in groups:
        for m in group.values() if isinstance(group, dict) else ():
            if isinstance(m, dict) and "acceptance_rate" in m:
                old = m.pop("acceptance_rate")
                m.update(acceptance=None, drafted_accepted=old if m.get("acceptance_by_position") else None)


def tested_counted(report: dict) -> bool:
    """Whether the report's acceptance is over tested drafts: schema 1 files hold only drafted_accepted."""
    return report.get("schema") != 1


def _check_peers(peers, path) -> None:
    """The peers' sections (bench --peers llamacpp): what the report prints of them is text."""
    if not isinstance(peers, dict) or not all(isinstance(p, dict) for p in peers.values()):
        raise ResultsError(f"{path}: 'peers' must map peer names to their sections")
    for name, p in peers.items():
        if not isinstance(p.get("failure"), (str, type(None))) or not isinstance(p.get("identical_to", {}), dict):
            raise ResultsError(f"{path}: peer {name}: 'failure' must be text or null, 'identical_to' an object")


def _check_engines(engines, path) -> None:
    """An engine peer's section: its step traces are traces (checked as any trace file is)."""
    if not isinstance(engines, dict) or not all(isinstance(e, dict) for e in engines.values()):
        raise ResultsError(f"{path}: 'engines' must map engine names to their sections")
    for name, e in engines.items():
        for key in ("trace", "paradec_trace"):
            if e.get(key) is not None:
                try:
                    Trace.from_dict(e[key])
                except TraceError as err:
                    raise ResultsError(f"{path}: engine {name}'s {key}: {err}") from None
