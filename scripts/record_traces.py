"""Record the traces the app replays (assets/traces): one or more per method page, plus the
arena set (every method on one prompt, in this one process, after a warm-up).

    python scripts/record_traces.py [--draft self:28] [--max-new-tokens 64] [--out assets/traces]

Uses the embedded SmolLM2-135M-Instruct on the CPU in float32; takes a few minutes."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from paradec import methods, models, run  # noqa: E402
from ui.presets import DEFAULT_DRAFT, PRESETS  # noqa: E402

EXPLAIN, HAIKU = PRESETS["Explain (free text)"], PRESETS["Haiku (creative)"]
EDIT = PRESETS["Fix the spelling (copies the prompt)"]
SAMPLED = dict(temperature=0.7, top_p=1.0, seed=0)

# file stem -> (method, prompt, params, sampling); the stem's part after the method names the trace.
PAGES = {
    "ar-greedy": ("ar", EXPLAIN, {}, {}),
    "sps-greedy": ("sps", EXPLAIN, {"k": 4}, {}),
    "sps-sampled": ("sps", HAIKU, {"k": 4}, SAMPLED),
    "pld-greedy": ("pld", EDIT, {"k": 8}, {}),
    "pld-sampled": ("pld", EDIT, {"k": 8}, SAMPLED),
}
ARENA = {"ar": {}, "sps": {"k": 4}, "pld": {"k": 8}}


def record(target, draft, method, prompt, params, sampling, max_new):
    t = run.run(target, method, prompt, params, max_new, draft=draft if methods.needs_draft_model(method) else None,
                **sampling)
    print(f"  {method:4s} {params} {sampling or 'greedy'}: {t.new_tokens} tokens, tau {t.tau:.2f}, "
          f"acceptance {t.acceptance_rate:.2f}, {t.wall_s:.1f} s", flush=True)
    return t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draft", default=DEFAULT_DRAFT, help="draft model for sps (default: %(default)s)")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--out", type=Path, default=ROOT / "assets" / "traces")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    target = models.load(None, "cpu", "float32")
    draft = models.load_draft(a.draft, target)
    (a.out / "arena").mkdir(parents=True, exist_ok=True)
    print("method pages:", flush=True)
    for stem, (method, prompt, params, sampling) in PAGES.items():
        record(target, draft, method, prompt, params, sampling, a.max_new_tokens).save(a.out / f"{stem}.json")
    print("arena (after a warm-up):", flush=True)
    run.run(target, "ar", EDIT, {}, 8)
    for method, params in ARENA.items():
        record(target, draft, method, EDIT, params, {}, a.max_new_tokens).save(a.out / "arena" / f"{method}.json")
    print(f"done in {time.perf_counter() - t0:.0f} s -> {a.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
