"""Record the traces the app replays (assets/traces): one or more per method page, plus the
arena set (every method on one prompt, in this one process, after a warm-up).

    python scripts/record_traces.py [--draft trained] [--max-new-tokens 64] [--out assets/traces] [--only NAMES]

Uses the embedded SmolLM2-135M-Instruct on the CPU in float32, on one thread; takes a few minutes.
Also measures forward_cost.json: one target forward over 1..64 tokens at both precisions (the Roofline page's
and the home page's chart)."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from paradec import methods  # noqa: E402
from paradec.costs import machine  # noqa: E402
from paradec.runner import Request, Runner  # noqa: E402
from paradec.traces import files  # noqa: E402
from ui.presets import DEFAULT_DRAFT, PRESETS  # noqa: E402

EXPLAIN, HAIKU = PRESETS["Explain (free text)"], PRESETS["Haiku (creative)"]
EDIT = PRESETS["Fix the spelling (copies the prompt)"]
CODE = PRESETS["Code edit (copies the prompt)"]
SAMPLED = dict(temperature=0.7, top_p=1.0, seed=0)

# file stem -> (method, prompt, params, sampling); the stem's part after the method names the trace.
PAGES = {
    "ar-greedy": ("ar", EXPLAIN, {}, {}),
    "sps-greedy": ("sps", EXPLAIN, {"k": 4}, {}),
    "sps-sampled": ("sps", HAIKU, {"k": 4}, SAMPLED),
    # The draft-length rules on sps-greedy's prompt. The adaptive ones may reach 8 tokens. learned's
    # threshold is a chance of being committed: a token pays when that chance beats its cost in AR
    # steps, ~(3 ms to draft + ~4 ms more verify) / ~90 ms on this CPU (forward_cost.json), so 0.1.
    "sps-fixed": ("sps", EXPLAIN, {"k": 4, "draft_length": "fixed"}, {}),
    "sps-heuristic": ("sps", EXPLAIN, {"k": 4, "draft_length": "heuristic"}, {}),
    "sps-confidence": ("sps", EXPLAIN, {"k": 8, "draft_length": "confidence", "threshold": 0.4}, {}),
    "sps-learned": ("sps", EXPLAIN, {"k": 8, "draft_length": "learned", "threshold": 0.1}, {}),
    "pld-greedy": ("pld", EDIT, {"k": 8}, {}),
    "pld-sampled": ("pld", EDIT, {"k": 8}, SAMPLED),
    # The code edit repeats its prompt: Jacobi converges a few tokens at once there, and
    # Lookahead's pool collects n-grams that later win verification.
    "jacobi-greedy": ("jacobi", CODE, {"block": 8, "init": "repeat"}, {}),
    # The same prompt and block on the consistency-trained model (the Jacobi page shows both grids).
    "cllm-greedy": ("cllm", CODE, {"block": 8, "init": "repeat"}, {}),
    "lookahead-greedy": ("lookahead", CODE, {"window": 5, "ngram": 3, "candidates": 3}, {}),
    # Medusa with the shipped heads and their default tree; sampled: exact (lossless) acceptance.
    "medusa-greedy": ("medusa", EXPLAIN, {}, {}),
    "medusa-sampled": ("medusa", HAIKU, {}, SAMPLED),
    # EAGLE-1/2/3 with the shipped heads and default trees, on Medusa's prompt so the page can
    # compare the three (and Medusa) on the same text; sampled: the verifier's lossless rejection.
    "eagle-greedy": ("eagle", EXPLAIN, {}, {}),
    "eagle2-greedy": ("eagle2", EXPLAIN, {}, {}),
    "eagle3-greedy": ("eagle3", EXPLAIN, {}, {}),
    "eagle3-sampled": ("eagle3", HAIKU, {}, SAMPLED),
    # The draft-length rules on EAGLE-3 (same prompt as the sps ones): a step's draft length is the
    # tree's depth, asked along the best branch. Not growing a depth saves a head pass; the verify
    # pass keeps total_tokens. Thresholds measured on this prompt: 0.4 / 0.3 keep fixed's tau.
    "eagle3-fixed": ("eagle3", EXPLAIN, {"draft_length": "fixed"}, {}),
    "eagle3-heuristic": ("eagle3", EXPLAIN, {"draft_length": "heuristic"}, {}),
    "eagle3-confidence": ("eagle3", EXPLAIN, {"draft_length": "confidence", "threshold": 0.4}, {}),
    "eagle3-learned": ("eagle3", EXPLAIN, {"draft_length": "learned", "threshold": 0.3}, {}),
    # Early exit with the shipped adapter at layer 2, on the same prompt as sps and EAGLE.
    "early_exit-greedy": ("early_exit", EXPLAIN, {"k": 4}, {}),
    # Parallel draft-and-verify with sps's draft and k, and the same drafts one after the other. On one
    # torch thread: the worker thread then gets the second core (two workers, one core each).
    "mirror-greedy": ("mirror", EXPLAIN, {"k": 4}, {}),
    "mirror-sequential": ("mirror", EXPLAIN, {"k": 4, "parallel": False}, {}),
}
ARENA = {"ar": {}, "sps": {"k": 4}, "pld": {"k": 8}, "jacobi": {}, "lookahead": {}, "medusa": {}, "eagle": {},
         "eagle2": {}, "eagle3": {}, "early_exit": {}, "mirror": {"k": 4}}
# Medusa's tree presets on medusa-greedy's prompt, one after the other: what a tree's size and shape do to τ
# and to the time per token on this CPU (the Medusa page's "Trees compared").
TREES = ("chain4", "small8", "cpu12", "wide16", "mc_sim_7b_63")
PARTS = ["cost", *PAGES, "arena", "trees"]  # what --only can name
# Recorded on the float32 weights: at 4 bits the model answers the code edit in one sentence and copies no code,
# so Jacobi and Lookahead find nothing to converge on; in float32 it rewrites the code, as cllm (whose deltas
# merge into float32 weights) does on the same prompt, and the Jacobi page compares the two grids.
FLOAT32 = {"jacobi-greedy", "lookahead-greedy"}


def record(runner, draft: str, method: str, prompt: str, params: dict, sampling: dict, max_new: int):
    """One trace through the runner (which makes cllm's fine-tuned copy and loads the draft once)."""
    d = draft if methods.needs_draft_model(method) else None
    t = runner.decode(Request(method, prompt, params, max_new, **sampling, draft=d))
    print(f"  {method:4s} {params} {sampling or 'greedy'}: {t.new_tokens} tokens, tau {t.tau:.2f}, "
          f"acceptance {'-' if t.acceptance is None else f'{t.acceptance:.2f}'}, {t.wall_s:.1f} s", flush=True)
    return t


# Every size from 1 to 8: the trees a CPU affords are that small, and Medusa's tree rule (paradec.train.medusa) can
# only weigh the sizes measured here; 13 is 12 + 1, the first row past two of the AVX2 kernel's 6-row blocks.
COST_SIZES = (1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 16, 24, 32, 48, 64)


def forward_cost(runner, sizes=COST_SIZES, repeats=7) -> dict:
    """Median ms of one verify pass over n tokens after the same cached context, through paradec's fast
    forward at both precisions (the default first: what every run decodes with) and through Hugging Face's own
    forward on the float32 weights; `weights` names each curve's; `machine`: the probe at the same threads."""
    import torch

    from paradec.core.verify import pass_ms

    target, f32 = runner.target(), runner.float32()
    forwards = {"paradec": target.decoder, "paradec float32": f32.decoder, "Hugging Face": f32.model}
    weights = {"paradec": target.weights, "paradec float32": "f32", "Hugging Face": "f32"}
    if f32 is target:  # a float32 default: its curve once
        del forwards["paradec float32"], weights["paradec float32"]
    ctx = target.tokenizer(EXPLAIN * 3)["input_ids"]
    times = pass_ms(forwards, ctx, sizes, repeats)
    curves = {name: {"median_ms": [statistics.median(t[n]) for n in sizes], "all_ms": [t[n] for n in sizes],
                     "weights": weights[name]} for name, t in times.items()}
    for name, c in curves.items():
        print(f"  {name} forward ms by tokens:", dict(zip(sizes, map(round, c["median_ms"]))), flush=True)
    return {"model": target.name, "device": target.device, "dtype": target.dtype, "context_tokens": len(ctx),
            "threads": torch.get_num_threads(), "tokens": list(sizes), "curves": curves,
            "machine": machine.probe(torch.get_num_threads())}  # the roof the Roofline page places these passes on


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draft", default=DEFAULT_DRAFT, help="draft model for sps (default: %(default)s)")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--out", type=Path, default=ROOT / "assets" / "traces")
    ap.add_argument("--only", type=lambda v: v.split(","), default=PARTS, metavar="NAMES",
                    help=f"comma-separated subset of: {', '.join(PARTS)} (default: all)")
    ap.add_argument("--repeats", type=int, default=21, help="timings per size and forward for cost (median kept)")
    ap.add_argument("--cost-threads", type=int, default=2,
                    help="torch CPU threads for cost (default 2: what the bench and the app decode with)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads (default 1: on a shared 2-core machine, 2 threads that wait on each "
                         "other make multi-token passes several times slower and the timings meaningless)")
    a = ap.parse_args(argv)
    if set(a.only) - set(PARTS):
        ap.error(f"--only: unknown {', '.join(sorted(set(a.only) - set(PARTS)))} (choose from {', '.join(PARTS)})")
    import torch

    torch.set_num_threads(a.threads)
    a.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    runner, f32 = Runner("cpu", "float32"), Runner("cpu", "float32", weights="f32")
    if "cost" in a.only:  # its own file says how many threads it ran on
        print("cost of one forward:", flush=True)
        torch.set_num_threads(a.cost_threads)
        files.write_atomic(a.out / "forward_cost.json", json.dumps(forward_cost(runner, repeats=a.repeats)))
        torch.set_num_threads(a.threads)
    if set(PAGES) & set(a.only):  # the machine that times the pages' steps: the Roofline page models them on it
        files.write_atomic(a.out / "machine.json", json.dumps(machine.probe(a.threads), indent=1) + "\n")
    print("method pages:", flush=True)
    for stem, (method, prompt, params, sampling) in PAGES.items():
        if stem in a.only:
            record(f32 if stem in FLOAT32 else runner, a.draft, method, prompt, params, sampling,
                   a.max_new_tokens).save(a.out / f"{stem}.json")
    if "arena" in a.only:
        print("arena (after a warm-up):", flush=True)
        (a.out / "arena").mkdir(parents=True, exist_ok=True)
        runner.decode(Request("ar", EDIT, max_new_tokens=8))
        for method, params in ARENA.items():
            record(runner, a.draft, method, EDIT, params, {}, a.max_new_tokens).save(a.out / "arena" / f"{method}.json")
    if "trees" in a.only:
        print("medusa trees:", flush=True)
        (a.out / "medusa-trees").mkdir(parents=True, exist_ok=True)
        for tree in TREES:
            record(runner, a.draft, "medusa", EXPLAIN, {"tree": tree}, {}, a.max_new_tokens).save(
                a.out / "medusa-trees" / f"{tree}.json")
    print(f"done in {time.perf_counter() - t0:.0f} s -> {a.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
