"""bench --batch: every method at several batch sizes, in the same process as the rest of the benchmark.

For each batch size B the bench's prompts go in groups of B, in file order; where too few are left to fill
a group (or there are fewer than B prompts), the group is filled from the first prompts again, so every batch
decodes B sequences. Every method decodes each group as one batch (paradec.run.decode_batch: the sequences
share each target forward), the methods one after another on the same group, so load from elsewhere falls on
all of them alike. Per method and batch size (`by_batch`, beside the method's other figures):

- tokens_per_s: every sequence's new tokens / the batches' time (the whole batch's throughput);
- speedup: that over AR's tokens_per_s at the same batch size;
- tau: new tokens per verify pass a sequence took part in;
- identical_runs / runs: sequences whose tokens are AR's at batch 1 on the same prompt / sequences decoded;
- latency_s: the mean, over sequences, of the time from its batch's start until it finished;
- rows: the mean rows of a shared verify pass (every sequence's pending token, nodes and window together),
  what places the pass on the roofline.

Times are the batch's timed region (paradec.core.engine.Clock): every sequence's drafting, the shared
forwards, every sequence's acceptance and commit; not the trace's bookkeeping.

Standard library only at import: bench_report reads what this writes, and the app loads it without torch."""
from __future__ import annotations

import math
import sys

FIELDS = ("tokens_per_s", "speedup", "tau", "identical_runs", "runs", "latency_s")
MAX_SIZES = 16


def parse_sizes(text: str, most: int) -> list[int]:
    """--batch "1,2,4" -> [1, 2, 4] (ascending, each once): ValueError, one line, for anything else."""
    parts = [p.strip() for p in text.split(",")]
    if not all(p.isdigit() and len(p) <= 6 for p in parts):
        raise ValueError(f"expects batch sizes separated by commas (e.g. 1,2,4,8), got {text[:40]!r}")
    sizes = sorted({int(p) for p in parts})
    if sizes[0] < 1 or sizes[-1] > most or len(sizes) > MAX_SIZES:
        raise ValueError(f"batch sizes go from 1 to {most}, at most {MAX_SIZES} of them, got {text[:40]!r}")
    return sizes


def groups(count: int, size: int) -> list[list[int]]:
    """Prompt indices 0..count-1 in groups of `size`, the last group filled from the first prompts again."""
    return [[(first + j) % count for j in range(size)] for first in range(0, count, size)]


def add(report: dict, runner, names: dict, rows: list[dict], options, request, runs: dict) -> None:
    """bench()'s batches, after its other runs: each method's by_batch into report["methods"]. request(method,
    pairs, prompt) is bench's Request; runs: its runs so far (AR's give the batch-1 tokens)."""
    from .run import decode_batch

    def decode(method: str, pairs, prompts: list[str]):
        p = runner.prepare(request(method, pairs, prompts[0]))  # loaded once: the runner keeps it
        return decode_batch(p.target, method, prompts, p.params, draft=p.draft, **options.sampling())

    reference = [rec["tokens"] for _, rec in runs["ar"][::options.repeats]]  # each prompt's first AR run
    for name, by in run(decode, names, rows, list(options.batch), options.repeats, reference).items():
        report["methods"][name]["by_batch"] = by


def run(decode, names: dict, rows: list[dict], sizes: list[int], repeats: int, reference: list[list[int]]) -> dict:
    """decode(method, pairs, prompts) -> the batch's traces; reference[n]: AR's tokens at batch 1 on rows[n].
    -> {label: {"B": figures}} for every method of names (label -> (method, its KEY=VALUE pairs))."""
    found = {name: {} for name in names}
    for size in sizes:
        batches = {name: [] for name in names}  # label -> [(row indices, traces)]
        for n, idx in enumerate(groups(len(rows), size), 1):
            print(f"\rbench: batch size {size}, batch {n}/{-(-len(rows) // size)}", end="", file=sys.stderr,
                  flush=True)
            for _ in range(repeats):
                for name, (method, pairs) in names.items():
                    batches[name].append((idx, decode(method, pairs, [rows[i]["prompt"] for i in idx])))
        for name in names:
            found[name][str(size)] = figures(batches[name], reference)
        for name in names:
            found[name][str(size)]["speedup"] = round(found[name][str(size)]["tokens_per_s"] /
                                                      max(1e-9, found["ar"][str(size)]["tokens_per_s"]), 3)
    print(file=sys.stderr)
    return found


def figures(batches: list, reference: list[list[int]]) -> dict:
    """One method's figures at one batch size (speedup is filled in beside AR's): batches [(row indices, traces)],
    each trace's wall_s the batch's clock when its sequence finished (the batch's time: the largest)."""
    traces = [t for _, ts in batches for t in ts]
    tokens = sum(len(t.token_ids) for t in traces)
    wall = sum(max(t.wall_s for t in ts) for _, ts in batches)
    forwards = sum(t.target_forwards for t in traces)
    same = sum(t.token_ids == reference[i] for idx, ts in batches for i, t in zip(idx, ts))
    passes = sum(max(len(t.steps) for t in ts) for _, ts in batches)  # a sequence that ended leaves the passes
    rows = sum(s.verified for t in traces for s in t.steps[1:]) / max(1, passes - len(batches))  # the prefill out
    # After the prompts' pass (every sequence's first step: its drafting, then the shared pass over the prompts'
    # rows, which is compute-bound and costs the same per token at any B): the decoding steps alone.
    first = sum(sum(t.steps[0].draft_ms for t in ts) + max(t.steps[0].verify_ms for t in ts) for _, ts in batches)
    after = tokens - sum(len(t.steps[0].tokens) for t in traces)
    return {"tokens_per_s": round(tokens / max(1e-9, wall), 2), "speedup": None,
            "decode_tokens_per_s": round(after / max(1e-9, wall - first / 1e3), 2),
            "tau": round(tokens / forwards, 3) if forwards else None, "identical_runs": same, "runs": len(traces),
            "latency_s": round(sum(t.wall_s for t in traces) / max(1, len(traces)), 4), "rows": round(rows, 2)}


def crossing(by_batch: dict) -> float | None:
    """The batch size where a method's speedup over AR falls through 1.0, interpolated in log2(B) between the
    two measured sizes around it; None when it stays above (or starts below) 1.0 at every size measured."""
    points = sorted((int(b), m["speedup"]) for b, m in by_batch.items() if m.get("speedup") is not None)
    for (b0, s0), (b1, s1) in zip(points, points[1:]):
        if s0 >= 1.0 > s1:
            f = (s0 - 1.0) / (s0 - s1)
            return 2 ** (math.log2(b0) + f * (math.log2(b1) - math.log2(b0)))
    return None


def check(by_batch) -> str:
    """Why a method's by_batch is not one this module writes, or "" (a results file's loader asks)."""
    if not isinstance(by_batch, dict) or not all(isinstance(k, str) and k.isdigit() for k in by_batch):
        return "'by_batch' must map batch sizes to their figures"
    for m in by_batch.values():
        if not isinstance(m, dict) or not set(FIELDS) <= set(m):
            return f"each batch size's figures need {', '.join(FIELDS)}"
    return ""


def by_batch(report: dict) -> dict[str, dict]:
    """Each method's figures by batch size, for the methods a results file has them for."""
    return {name: m["by_batch"] for name, m in report["methods"].items() if m.get("by_batch")}


def lines(report: dict) -> list[str]:
    """The printed table by batch size: speedup over AR at the same size and the batch's tokens/s, then each
    sequence's mean latency; [] for a report without batches."""
    rows = by_batch(report)
    if not rows:
        return []
    sizes = sorted({int(b) for by in rows.values() for b in by})
    w = max(18, *(len(n) + 2 for n in rows))
    out = ["", f"{'by batch size':<{w}}" + "".join(f"{f'B={b}':>17}" for b in sizes) + f"{'identical':>12}"]
    for name, by in rows.items():
        cells = [by.get(str(b)) for b in sizes]
        out.append(f"{name:<{w}}" + "".join(f"{c['speedup']:>8.2f}x{c['tokens_per_s']:>8.1f}" if c else f"{'-':>17}"
                                            for c in cells)
                   + f"{sum(c['identical_runs'] for c in cells if c):>6}/{sum(c['runs'] for c in cells if c)}")
    out += _one_field("latency (s)", "latency_s", ".3f", rows, sizes, w)
    out += _one_field("after the prompts", "decode_tokens_per_s", ".1f", rows, sizes, w)
    out.append("by batch size: speedup = tokens/s over AR's at the same batch size, then the whole batch's "
               "tokens/s; identical = sequences with AR's batch-1 tokens; latency = mean time until a sequence "
               "finished; after the prompts = the whole batch's tokens/s once the prompts' pass is done")
    return out


def _one_field(title: str, field: str, spec: str, rows: dict, sizes: list[int], w: int) -> list[str]:
    """A table of one figure by method and batch size ("-" where a size or the field is missing)."""
    out = ["", f"{title:<{w}}" + "".join(f"{f'B={b}':>17}" for b in sizes)]
    for name, by in rows.items():
        cells = [by.get(str(b), {}).get(field) for b in sizes]
        out.append(f"{name:<{w}}" + "".join(f"{'-':>17}" if c is None else f"{c:>17{spec}}" for c in cells))
    return out
