"""Record the numerics view's data (assets/numerics.json): the same greedy prompts decoded by AR with the
embedded model in float32 and in bfloat16 on this CPU, where the two texts part, and each run's own
top-5 probabilities there, and, re-reading the float32 answer in one pass with each model, every position's gap
between the float32 model's two best logits beside whether bfloat16 picks the same token there.

    python scripts/record_numerics.py [--max-new-tokens 96] [--out assets/numerics.json]

Tokens and logits only, no timings: any machine, busy or not, records the same file (a minute or two)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from paradec import models, run  # noqa: E402
from paradec.traces.files import write_atomic  # noqa: E402
from ui.presets import PRESETS  # noqa: E402

DTYPES = ("float32", "bfloat16")
MORE = ["Tell me a short story about a robot.", "List five facts about the moon."]  # longer answers part more
TOP = 5


def logits_along(target, ids: list[int]):
    """Teacher-forced: the model's logits at every position of ids, in float32 for comparing."""
    import torch

    with torch.no_grad():
        out = target.model(torch.tensor([ids], device=target.model.device))
    return out.logits[0].float()


def compare(targets: dict, prompt: str, max_new: int) -> dict:
    """Both greedy runs of one prompt, and the float32 run's answer re-read by both models."""
    traces = {d: run.run(t, "ar", prompt, {}, max_new) for d, t in targets.items()}
    ref, low = (traces[d] for d in DTYPES)
    a, b = ref.token_ids, low.token_ids
    part = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), None if len(a) == len(b) else min(len(a), len(b)))
    ids = ref.prompt_ids + a
    start = len(ref.prompt_ids) - 1  # the logits that predict answer token 0
    logits = {d: logits_along(t, ids)[start : start + len(a)] for d, t in targets.items()}
    f32, bf16 = logits["float32"], logits["bfloat16"]
    top2 = f32.topk(2, dim=-1)
    rows = [{"pos": k, "token": a[k], "gap": round(float(top2.values[k, 0] - top2.values[k, 1]), 4),
             "bf16_token": int(bf16[k].argmax()), "diff": round(float((f32[k] - bf16[k]).abs().max()), 4)}
            for k in range(len(a))]
    at = {}  # each run's own top-k where they part (an AR step commits one token: step k drew token k)
    if part is not None and part < min(len(a), len(b)):
        at = {d: [[int(t), round(float(p), 5)] for t, p in traces[d].steps[part].last_p_top[:TOP]] for d in DTYPES}
    words = {str(t): targets["float32"].tokenizer.decode([t]) for t in {*a, *b, *(r["bf16_token"] for r in rows)}
             | {i for top in at.values() for i, _ in top}}
    return {"prompt": prompt, "tokens": {"float32": a, "bfloat16": b}, "parts_at": part, "positions": rows,
            "top_at_part": at, "token_text": words}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--out", type=Path, default=ROOT / "assets" / "numerics.json")
    a = ap.parse_args(argv)
    import json

    import torch

    torch.set_num_threads(1)
    targets = {d: models.load(None, "cpu", d, fast=False) for d in DTYPES}
    runs = [compare(targets, prompt, a.max_new_tokens) for prompt in [*PRESETS.values(), *MORE]]
    meta = {"model": targets["float32"].name, "device": "cpu", "torch": torch.__version__,
            "max_new_tokens": a.max_new_tokens, "decoding": "greedy AR, chat template"}
    write_atomic(a.out, json.dumps({**meta, "runs": runs}, indent=1))
    print(f"wrote {a.out}: " + ", ".join(f"parts at {r['parts_at']}" for r in runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
