"""The claims of the article the app teaches (a French glossary article on parallel decoding), each checked
against what paradec measured: figures read from the shipped runs in assets/ (never typed), the run they come
from, and a verdict. The wording of each claim and of its explanation lives in the app (ui/article.py); this
module only measures, so a test can check every figure against its file.

Verdicts: "supported" (the run agrees), "partly" (it agrees on one part), "different" (this machine and model
give another answer; the app says why and what would change it), "not measurable" (nothing here can run it)."""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from . import catalog
from .bench_report import load as load_bench
from .costs import roofline
from .costs.machine import recorded as recorded_machine
from .traces.trace import Trace

BENCH = "bench/cpu-2core.json"
MIRROR = "bench/cpu-1thread-mirror.json"
COST = "traces/forward_cost.json"
MACHINE = "traces/machine.json"
TREE = "traces/medusa-trees/mc_sim_7b_63.json"
SINGLE_MODEL = tuple(m.name for m in catalog.METHODS.values() if m.family == "heads")  # the target's features
GPU = "H100 SXM"  # the roofline preset the article's GPU claims are read on


@dataclass(frozen=True)
class Check:
    key: str  # the claim (the app holds its wording)
    verdict: str  # supported / partly / different / not measurable
    values: dict  # the figures, by name, as the app's sentences use them
    sources: tuple[str, ...]  # the files under assets/ they come from
    view: str  # the page (URL path) that shows it


READERS = {"json": lambda path: json.loads(path.read_text()), "bench": load_bench, "trace": Trace.load}


@functools.lru_cache(maxsize=32)
def _read(kind: str, path: Path, _mtime_ns: int):
    """A shipped file, read once while it stays the same (the checks read the bench file eight times); read only.
    _mtime_ns is only the cache's key: a file changed on disk is read again."""
    return READERS[kind](path)


def _file(kind: str, root: Path, name: str):
    path = root / name
    return _read(kind, path, path.stat().st_mtime_ns)


def _json(root: Path, name: str) -> dict:
    return _file("json", root, name)


def _trace(root: Path, name: str) -> Trace:
    return _file("trace", root, name)


def _cost_ratio(root: Path, curve: str, n: int) -> float:
    """Median cost of a pass of n tokens over a 1-token pass (the nearest measured size at or above n)."""
    d = _json(root, COST)
    k = next(i for i, t in enumerate(d["tokens"]) if t >= n)
    ms = d["curves"][curve]["median_ms"]
    return ms[k] / ms[0]


def verify_eight(root: Path) -> Check:
    ratio, hf = _cost_ratio(root, "paradec", 8), _cost_ratio(root, "Hugging Face", 8)
    return Check("verify_eight", "supported" if ratio < 1.5 else "different", {"ratio": ratio, "hf": hf},
                 (COST,), "roofline")


def intensity(root: Path) -> Check:
    """Arithmetic intensity of a one-token decode pass (analytic), against the ridge points."""
    small = roofline.MODELS["SmolLM2-135M-Instruct"]
    big = roofline.MODELS["Llama-3.1-8B"]
    at = {"bf16_8b": roofline.forward_cost(big.with_dtype("bfloat16"), 1, 500).intensity,
          "bf16_small": roofline.forward_cost(small.with_dtype("bfloat16"), 1, 30).intensity,
          "fp32_small": roofline.forward_cost(small.with_dtype("float32"), 1, 30).intensity}
    gpu = roofline.HARDWARE[GPU]
    cpu = recorded_machine(root / MACHINE)
    ridge = {"ridge_gpu": gpu.ridge("bfloat16"), "ridge_cpu": cpu.ridge("float32")}
    return Check("intensity", "supported" if 0.5 <= at["bf16_8b"] <= 2 else "different", {**at, **ridge},
                 (MACHINE,), "roofline")


def _bench(root: Path) -> dict:
    return _file("bench", root, BENCH)


def _best(report: dict) -> tuple[str, float]:
    name = max((m for m in report["methods"] if not m.startswith("hf_") and m != "ar"),
               key=lambda m: report["methods"][m]["speedup"])
    return name, report["methods"][name]["speedup"]


def sps_speedup(root: Path) -> Check:
    b = _bench(root)
    sps, mem = b["methods"]["sps"], b["memory"]["methods"]["sps"]
    best, best_speedup = _best(b)
    values = {"speedup": sps["speedup"], "tau": sps["tau"], "best": best, "best_speedup": best_speedup,
              "draft_share": mem["weights_draft"] / mem["weights_target"]}
    return Check("sps_speedup", "supported" if sps["speedup"] >= 2 else "different", values, (BENCH,), "sps")


def lookahead_speedup(root: Path) -> Check:
    la = _bench(root)["methods"]["lookahead"]
    return Check("lookahead_speedup", "supported" if la["speedup"] >= 1.5 else "different",
                 {"speedup": la["speedup"], "tau": la["tau"]}, (BENCH,), "lookahead")


def by_task(root: Path, method: str = "eagle3") -> Check:
    """τ by prompt category: is code among the best and creative writing the worst?"""
    cats = {c: v[method]["tau"] for c, v in _bench(root)["categories"].items() if method in v}
    ranked = sorted(cats, key=cats.get, reverse=True)
    code_top = ranked.index("coding") < len(ranked) / 2
    writing_last = ranked[-1] == "writing"
    verdict = "supported" if code_top and writing_last else "partly" if code_top or writing_last else "different"
    values = {"method": method, "top": ranked[0], "top_tau": cats[ranked[0]], "last": ranked[-1],
              "last_tau": cats[ranked[-1]], "coding_tau": cats["coding"], "coding_rank": ranked.index("coding") + 1,
              "categories": len(ranked)}
    return Check("by_task", verdict, values, (BENCH,), "benchmark")


def lossless(root: Path) -> Check:
    methods = {m: v for m, v in _bench(root)["methods"].items() if not m.startswith("hf_") and m != "ar"}
    same = sum(v["identical_runs"] for v in methods.values())
    runs = sum(v["runs"] for v in methods.values())
    return Check("lossless", "supported" if same == runs else "different",
                 {"identical": same, "runs": runs, "methods": len(methods)}, (BENCH,), "sps")


def medusa_quality(root: Path) -> Check:
    m = _bench(root)["methods"]["medusa"]
    return Check("medusa_quality", "different", {"identical": m["identical_runs"], "runs": m["runs"]},
                 (BENCH,), "medusa")


def tree_dozens(root: Path) -> Check:
    t = _trace(root, TREE)
    step = max(t.steps, key=lambda s: len(s.nodes))
    parents = {n.parent for n in step.nodes}
    leaves = sum(1 for k in range(len(step.nodes)) if k not in parents)
    depth = max(n.depth for n in step.nodes)
    measured = max(_json(root, COST)["tokens"])  # the widest pass timed; a 63-node tree's 64 rows cost more
    rows = min(len(step.nodes) + 1, measured)
    values = {"nodes": len(step.nodes), "leaves": leaves, "depth": depth, "tau": t.tau, "rows": rows,
              "cost": _cost_ratio(root, "paradec", rows)}
    return Check("tree_dozens", "supported" if leaves >= 24 else "partly", values, (TREE, COST), "medusa")


def eagle3_best(root: Path) -> Check:
    methods = _bench(root)["methods"]
    taus = {m: methods[m]["tau"] for m in SINGLE_MODEL if m in methods}
    best = max(taus, key=taus.get)
    runner = max((m for m in taus if m != "eagle3"), key=taus.get)
    return Check("eagle3_best", "supported" if best == "eagle3" else "different",
                 {"tau": taus["eagle3"], "runner": runner, "runner_tau": taus[runner]}, (BENCH,), "eagle")


def jacobi_prefix(root: Path) -> Check:
    jacobi, cllm = (_trace(root, f"traces/{m}-greedy.json") for m in ("jacobi", "cllm"))
    return Check("jacobi_prefix", "supported" if jacobi.tau < 1.2 else "different",
                 {"jacobi_tau": jacobi.tau, "cllm_tau": cllm.tau},
                 ("traces/jacobi-greedy.json", "traces/cllm-greedy.json"), "jacobi")


def draft_length(root: Path) -> Check:
    """Dynamic draft length (what Pacer learns) and confidence-based early exit (Kangaroo), as recorded."""
    runs = {p: _trace(root, f"traces/sps-{p}.json") for p in ("fixed", "learned", "confidence")}
    exit_ = _trace(root, "traces/early_exit-greedy.json")
    values = {f"{p}_tau": t.tau for p, t in runs.items()} | {
        f"{p}_drafts": t.draft_forwards for p, t in runs.items()} | {"exit_tau": exit_.tau}
    best = max(runs, key=lambda p: runs[p].tau)
    return Check("draft_length", "supported" if best != "fixed" else "partly", values,
                 tuple(f"traces/sps-{p}.json" for p in runs) + ("traces/early_exit-greedy.json",), "sps")


def mirror(root: Path) -> Check:
    m = _json(root, MIRROR)["methods"]
    return Check("mirror", "not measurable", {"speedup": m["mirror"]["speedup"], "sps": m["sps"]["speedup"]},
                 (MIRROR,), "mirror")


def deft(root: Path) -> Check:
    return Check("deft", "not measurable", {}, (), "medusa")


def memory(root: Path) -> Check:
    mem = _bench(root)["memory"]["methods"]
    target = mem["ar"]["weights_target"]
    values = {"draft": mem["sps"]["weights_draft"] / target, "heads": mem["eagle3"]["weights_heads"] / target,
              "medusa": mem["medusa"]["weights_heads"] / target, "kv": mem["eagle3"]["kv"] / mem["ar"]["kv"]}
    return Check("memory", "supported", values, (BENCH,), "benchmark")


CHECKS = (verify_eight, intensity, sps_speedup, lookahead_speedup, by_task, lossless, medusa_quality, tree_dozens,
          eagle3_best, jacobi_prefix, draft_length, mirror, deft, memory)


def check_all(root: Path) -> list[Check]:
    return [check(root) for check in CHECKS]


def run_of(root: Path, source: str) -> str:
    """When and where a shipped file was recorded, as it says itself (empty when it does not)."""
    d = _json(root, source)
    machine = d.get("machine") if isinstance(d.get("machine"), dict) else {}
    when = d.get("created") or d.get("measured") or ""
    where = ", ".join(str(x) for x in (machine.get("cpu"), machine.get("cores") and f"{machine['cores']} cores",
                                       machine.get("torch_threads") and f"{machine['torch_threads']} threads") if x)
    return "; ".join(x for x in (when, where or ", ".join(str(d[k]) for k in ("model", "device", "dtype") if k in d))
                     if x)
