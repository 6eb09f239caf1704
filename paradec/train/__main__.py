"""python -m paradec.train data | draft | medusa | eagle | early_exit | stop | cllm: make the self-distillation
data for the embedded model, then train the drafters that learn from it (and sps's learned draft length)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..models import load
from . import cllm, draft, eagle, early_exit, medusa, prompts, stop
from .answers import generate_shards
from .selfdistill import add_data_args, training_rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m paradec.train")
    sub = p.add_subparsers(dest="command", required=True)
    pr = sub.add_parser("prompts", help="the training prompts at scale (assets/data/train_prompts.jsonl)")
    pr.add_argument("--seed", type=int, default=0)
    d = sub.add_parser("data", help="the target answers the training prompts (shipped), then their features (cached)")
    add_data_args(d, training=False)
    d.add_argument("--limit", type=int, default=0, help="use the first N prompts (0 = all)")
    d.add_argument("--samples", type=int, default=2, help="answers per prompt: the first greedy, then sampled")
    d.add_argument("--batch", type=int, default=12, help="answers side by side (12 rows cost about one on the fast "
                   "forward; docs/drafters.md)")
    d.add_argument("--max-new-tokens", type=int, default=256)
    d.add_argument("--max-prompt-tokens", type=int, default=1024, help="leave out the prompts longer than this (the "
                   "batches of the shorter ones stay the same)")
    d.add_argument("--answer-tokens", type=int, default=0, help="stop once the answers hold this many of the "
                   "target's tokens (0: answer every prompt `samples` times)")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--model", default=None)
    draft.add_parser(sub)
    medusa.add_parser(sub)
    eagle.add_parser(sub)
    early_exit.add_parser(sub)
    stop.add_parser(sub)
    cllm.add_parser(sub)
    args = p.parse_args(argv)
    try:
        return _run(args, argv)
    except (OSError, ValueError) as e:  # a missing file, a drafter of the wrong kind: one line, not a traceback
        print(f"python -m paradec.train {args.command}: error: {e}", file=sys.stderr)
        return 2


def _run(args, argv) -> int:
    if args.command == "medusa":
        return medusa.command(args, argv)
    if args.command == "eagle":
        return eagle.command(args, argv)
    if args.command == "early_exit":
        return early_exit.command(args, argv)
    if args.command == "draft":
        return draft.command(args, argv)
    if args.command == "stop":
        return stop.command(args, argv)
    if args.command == "cllm":
        return cllm.command(args, argv)
    if args.command == "prompts":
        made = prompts.build(load(None, "cpu", "float32"), args.seed)
        prompts.save(made)
        print(f"{len(made)} training prompts -> {prompts.TRAIN_PROMPTS}", file=sys.stderr)
        return 0
    rows = training_rows()
    rows = rows[: args.limit] if args.limit else rows
    target = load(args.model)
    out = generate_shards(target, rows, Path(args.data), args.samples, args.batch, args.max_new_tokens,
                          args.max_prompt_tokens, seed=args.seed,
                          features=Path(args.features), answer_tokens=args.answer_tokens)
    print(f"self-distillation data in {out} (manifest.json: prompts used, samples, seed, rows, answer tokens)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
