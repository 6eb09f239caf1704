"""What limits a trained drafter: its draft agreement on rows it learned from against held-out rows.

A head that agrees far more often on its own training rows than on held-out ones has memorised them, and more
data would move it; one that scores about the same on both has learned what it can at its size and recipe, and
more of the same data will not. The rows are the shipped self-distillation answers' (the trainer's split: one
prompt in 10 held out), scored as the trainers score them: an EAGLE head at 3 unrolled steps (teacher-forced
context, then its own outputs), the sps draft's α at the answer positions, Medusa's heads' top-1 on 8,192
positions of the greedy answers (what they learn from). Run from the repository root once
`python -m paradec.train data` has computed the features:

    .venv/bin/python scripts/agreement_gap.py assets/drafters/eagle3-smollm2 [--draft assets/drafters/sps-smollm2]
        [--medusa assets/drafters/medusa-smollm2] [--greedy]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from paradec.drafters import eagle_head
from paradec.drafters.medusa_heads import load as load_heads
from paradec.models import load
from paradec.models.draft_model import load as load_draft
from paradec.train import draft as draft_training
from paradec.train.eagle import evaluate, lm_head_rows, split_rows
from paradec.train.loop import spread
from paradec.train.medusa import baseline_accuracy, positions
from paradec.train.selfdistill import data_dir, features_dir, load_shards


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("heads", nargs="*", help="EAGLE head folders (EAGLE-1 or EAGLE-3)")
    ap.add_argument("--draft", help="an sps draft's folder (paradec.train draft)")
    ap.add_argument("--medusa", help="Medusa heads' folder (paradec.train medusa)")
    ap.add_argument("--rows", type=int, default=128, help="rows scored on each side, spread over the split")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--greedy", action="store_true", help="score the sps draft on the greedy answers only (Medusa's "
                    "data: their features alone are enough)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    heads = {h: eagle_head.load(h)[0] for h in args.heads}
    target = load(None, "cpu", "float32").model
    embed = target.get_input_embeddings()
    if heads:
        print(f"EAGLE heads: {args.rows} rows a side, spread over each split; agreement at steps 1/2/3")
    for version in sorted({h.version for h in heads.values()}):
        # the rows of the features this version reads (EAGLE-3: the fused ones), a sample of each side kept
        shards = load_shards(data_dir(), ("hidden", "fuse") if version == 3 else ("hidden",), features_dir())
        sides = both_sides(*split_rows(shards, version), args.rows)
        for name, head in heads.items():
            if head.version != version:
                continue
            lm_rows = lm_head_rows(target, head.vocab_ids)
            for side, picked in sides.items():
                agree = evaluate(head, picked, embed, lm_rows, 3)
                print(f"{name}  {side:13s}", " ".join(f"{a:.3f}" for a in agree), flush=True)
    if args.draft:
        draft_gap(target, args.draft, args.rows, args.greedy)
    if args.medusa:
        medusa_gap(target, args.medusa)
    return 0


def both_sides(rows: list, held: list, n: int) -> dict[str, list]:
    """Up to n rows of each side of a trainer's split, spread over it, by the side's name."""
    return {"training rows": spread(rows, n), "held-out rows": spread(held, n)}


def draft_gap(target, folder: str, n: int, greedy: bool) -> None:
    """The sps draft's α (its greedy token is the target's) at answer positions, on each side (`greedy`: the
    greedy answers' rows only)."""
    draft = load_draft(target, Path(folder))
    rows = draft_training.rows_of(load_shards(data_dir(), ("hidden",), features_dir(), greedy))
    for side, picked in both_sides(*draft_training.split(rows), n).items():
        print(f"{folder}  {side:13s} alpha {draft_training.agreement(draft, picked)['alpha']:.3f}", flush=True)


def medusa_gap(target, folder: str, n: int = 8192) -> None:
    """Each Medusa head's top-1 (head k guesses the token k + 1 ahead) on n positions of each side."""
    heads = load_heads(folder)
    shards = load_shards(data_dir(), ("hidden",), features_dir(), greedy=True)
    lm = target.get_output_embeddings().weight.detach()
    for side, val in (("training rows", False), ("held-out rows", True)):
        x, y, _ = positions(shards, heads.num_heads, val)
        pick = torch.linspace(0, len(x) - 1, min(len(x), n)).long()  # spread over the data, as the trainer does
        top1 = [acc[0] for acc in baseline_accuracy(heads, lm, x[pick], y[pick])]
        print(f"{folder}  {side:13s} top-1 by head", " ".join(f"{a:.3f}" for a in top1), flush=True)


if __name__ == "__main__":
    sys.exit(main())
