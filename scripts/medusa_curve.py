"""Medusa's learning curve: does more data help its heads? The shipped recipe (the card's command) trained on shares
of the training prompts (`--train-fraction`, each share part of the next), each scored on the same kept-out
positions of the greedy answers: top-1 per head, and the τ the shipped tree expects from those accuracies (heads
taken as independent, as the tree rule does; on the bench prompts τ comes out about 10% lower).

Each share trains into paradec's cache (curve/medusa-F: a rerun skips a share already done and resumes one that was
cut off), then the points go into assets/drafters/medusa-smollm2/learning_curve.json. Run from the repository root
once `python -m paradec.train data` has computed the greedy answers' features (8 min a share on 2 Zen 2 cores):

    .venv/bin/python scripts/medusa_curve.py [--shares 0.125,0.25,0.5,1]"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from paradec.cache import cache_dir
from paradec.drafters.medusa import SHIPPED
from paradec.drafters.medusa_heads import load as load_heads
from paradec.traces.files import write_atomic
from paradec.train.__main__ import main as train

RECIPE = ["--steps", "2000", "--prompt-weight", "0.5", "--threads", "2"]  # the shipped heads' (their card)
OUT = SHIPPED / "learning_curve.json"
ABOUT = ("scripts/medusa_curve.py: the shipped heads' recipe on the first shares of the training prompts, each scored "
         "on the same kept-out positions of the greedy answers; expected τ of the shipped tree from those accuracies")


def expected_tau(acc: list[list[float]], paths: list[list[int]]) -> float:
    """1 + the expected accepted drafts of a tree: each path's chance, the product of its heads' rank accuracies."""
    return 1 + sum(math.prod(acc[depth][rank] for depth, rank in enumerate(p)) for p in paths)


def point(share: float, tree: list[list[int]]) -> dict:
    """One share trained (unless done before) and scored."""
    out = cache_dir() / "curve" / f"medusa-{share:g}"
    argv = ["medusa", *RECIPE, "--train-fraction", f"{share:g}", "--out", str(out)]
    if not (out / "stats.json").exists() and train(argv) != 0:
        raise SystemExit(f"medusa_curve: training the {share:g} share failed")
    stats = json.loads((out / "stats.json").read_text())
    acc = stats["accuracy"]
    return {"train_fraction": share, "train_positions": stats["train_positions"], "kept_step": stats["kept_step"],
            "top1_by_head": [a[0] for a in acc], "expected_tau_shipped_tree": round(expected_tau(acc, tree), 3),
            "val_positions": stats["val_positions"], "command": "python -m paradec.train " + " ".join(argv[:-2])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shares", default="0.125,0.25,0.5,1", help="shares of the training prompts, comma-separated")
    args = ap.parse_args()
    tree = load_heads(SHIPPED).tree
    points = [point(float(s), tree) for s in args.shares.split(",")]
    write_atomic(OUT, json.dumps({"about": ABOUT, "tree": tree, "points": points}, indent=1) + "\n")
    for p in points:
        print(f"{p['train_fraction']:>6g}  {p['train_positions']:>7,} positions  top-1 by head "
              f"{' '.join(f'{a:.3f}' for a in p['top1_by_head'])}  expected τ {p['expected_tau_shipped_tree']}")
    print(f"-> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
