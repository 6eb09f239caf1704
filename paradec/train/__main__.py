"""python -m paradec.train data | features | draft | medusa | eagle | early_exit | stop | cllm: make the
self-distillation data for the embedded model (features: remake only its features, for another engine), then train
the drafters that learn from it (and sps's learned draft length)."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..data import TRAIN_PROMPTS
from ..models import load
from ..traces import files
from . import cllm, draft, eagle, early_exit, medusa, prompts, stop
from .answers import add_features, generate_shards
from .selfdistill import add_data_args, features_of_args, training_rows


def parser() -> argparse.ArgumentParser:
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
    f = sub.add_parser("features", help="only the features of the shipped answers, for one target engine (--weights)")
    add_data_args(f, training=False)
    f.add_argument("--model", default=None)
    draft.add_parser(sub)
    medusa.add_parser(sub)
    eagle.add_parser(sub)
    early_exit.add_parser(sub)
    stop.add_parser(sub)
    cllm.add_parser(sub)
    for command in sub.choices.values():
        command.add_argument("--force", action="store_true", help="replace read-only output files too")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if hasattr(args, "features"):
        args.features = str(features_of_args(args))
    try:
        check_outputs(args)  # before any model loads: hours of training never end on an unwritable file
        return _run(args, argv)
    except (OSError, ValueError) as e:  # a missing file, a drafter of the wrong kind: one line, not a traceback
        print(f"python -m paradec.train {args.command}: error: {files.printable(str(e))}", file=sys.stderr)
        return 2


def _writes(args) -> tuple[str, list[str]] | None:
    """The folder a trainer writes (--out, or its default) and the files it writes there."""
    from ..drafters import early_exit as exits
    from ..drafters import medusa_heads
    from ..drafters.eagle import SHIPPED as EAGLE
    from ..models import draft_model, lora
    from .loop import CHECKPOINT

    card = ["card.md", CHECKPOINT]
    return {"medusa": lambda: (args.out, [medusa_heads.OURS, "stats.json", *card]),
            "draft": lambda: (args.out, [draft_model.WEIGHTS, "stats.json", *card]),
            "eagle": lambda: (args.out or str(EAGLE[args.version]), ["head.safetensors", "config.json", *card]),
            "early_exit": lambda: (args.out, [exits.WEIGHTS, exits.STATS, *card]),
            "cllm": lambda: (args.out, [lora.WEIGHTS, "stats.json", *card]),
            "stop": lambda: (args.out or args.draft.partition(":")[2] or str(draft_model.ASSET), [draft_model.STOP])
            }.get(args.command, lambda: None)()


def check_outputs(args) -> None:
    """paradec.traces.files' rule over what the command writes, then said on stderr. The inputs are the model
    and the self-distillation data; a trainer's --baseline is not among them: it is read whole before anything
    is written, and retraining over the shipped drafter while scoring it (scripts/retrain.sh) is the intent."""
    prog = f"python -m paradec.train {args.command}"
    read = [("--model", args.model)] if getattr(args, "model", None) and os.path.exists(args.model) else []
    if args.command == "prompts":
        files.plan([("the training prompts", TRAIN_PROMPTS)], read, args.force)
        files.announce(prog, [("the training prompts", TRAIN_PROMPTS)])
        return
    if args.command in ("data", "features"):
        if args.command == "data":
            files.plan_in("--data", args.data, ["manifest.json"], [("the training prompts", TRAIN_PROMPTS), *read],
                          args.force)
        files.plan_in("--features", args.features, [], read, args.force, parents=True)  # the cache's: made whole
        files.announce(prog, [("--data", args.data)] * (args.command == "data") + [("--features", args.features)])
        return
    if args.command == "stop" and not (args.out or args.draft.startswith("trained")):
        return  # stop.command refuses it: no folder to write
    folder, names = _writes(args)
    read += [(f"--{k}", getattr(args, k)) for k in ("data", "features") if hasattr(args, k)]
    files.plan_in("--out", folder, names, read, args.force)
    files.announce(prog, [("--out", folder)])


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
    if args.command == "features" and not any(Path(args.data).glob("shard-*.safetensors")):
        raise FileNotFoundError(f"no self-distillation answers in {args.data}")
    target = load(args.model, weights=args.weights)
    if args.command == "features":
        add_features(target, Path(args.data), Path(args.features))
        print(f"the {args.weights} target's features of {args.data} in {args.features}", file=sys.stderr)
        return 0
    rows = training_rows()
    rows = rows[: args.limit] if args.limit else rows
    out = generate_shards(target, rows, Path(args.data), args.samples, args.batch, args.max_new_tokens,
                          args.max_prompt_tokens, seed=args.seed,
                          features=Path(args.features), answer_tokens=args.answer_tokens)
    print(f"self-distillation data in {out} (manifest.json: prompts used, samples, seed, rows, answer tokens)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
