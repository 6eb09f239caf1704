"""Self-distillation data: the prompts the drafters train on, and the answers-and-features shards the
training commands read (made by paradec.train.answers: python -m paradec.train data). The answers are
shipped (assets/data/selfdistill); their features are remade from them into the cache."""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import torch
from safetensors import safe_open

from ..data import ASSETS, SPECBENCH, TRAIN_PROMPTS, first_turn, read_jsonl, split_of
from ..models.gguf import WEIGHTS
from .answers import features_of, read_answers


def training_rows(seed: int = 0) -> list[dict]:
    """The training prompts, never the held-out split: assets/data/train_prompts.jsonl (python -m paradec.train
    prompts) or, without it, Spec-Bench's training split (its second turns as follow-ups), seeded shuffle."""
    if TRAIN_PROMPTS.exists():
        return read_jsonl(TRAIN_PROMPTS)
    rows = [{"prompt": first_turn(r), **({"follow_up": r["turns"][1]} if len(r.get("turns", [])) > 1 else {})}
            for r in read_jsonl(SPECBENCH) if split_of(r) == "train" and first_turn(r)]
    random.Random(seed).shuffle(rows)
    return rows


VALIDATION_EVERY = 10


def validation(prompt: int) -> bool:
    """Whether the rows of this training prompt (its index in the shards) are kept out of training for early
    stopping and the held-out agreement: one prompt in 10, all of its answers and follow-ups together."""
    return prompt % VALIDATION_EVERY == 0


def data_dir() -> Path:
    """Where the self-distillation answers are made and read by default: shipped with the repository
    (token ids, ~4 MB), so that retraining never waits hours for the target to answer again."""
    return ASSETS / "data" / "selfdistill"


def features_dir(weights: str = "f32") -> Path:
    """Where the answers' features are made and read by default: paradec's cache (~12 GB: not git), a folder per
    target precision (`weights`: f32 or q4), since a drafter learns the features of the engine it will read."""
    from ..cache import cache_dir

    return cache_dir() / ("selfdistill-features" if weights == "f32" else f"selfdistill-features-{weights}")


def add_data_args(parser: argparse.ArgumentParser, training: bool = True) -> None:
    """--data and --features, the same for every command that reads or makes the shards; a command that
    learns from them (`training`) also takes --train-fraction."""
    parser.add_argument("--data", default=str(data_dir()), help="the self-distillation answers (shipped)")
    parser.add_argument("--weights", choices=WEIGHTS, default="f32",
                        help="the target engine whose features are made or learned from: f32 (float32) or q4 (the "
                        "file's 4-bit blocks, the CPU default); the answers are the same")
    parser.add_argument("--features", default=None, help="their features (python -m paradec.train data remakes "
                        "them; default: paradec's cache, a folder per --weights)")
    if training:
        parser.add_argument("--train-fraction", type=share, default=1.0,
                            help="learn from this share of the training prompts, every held-out one kept: a point "
                            "of a learning curve (does more data help?)")


def features_of_args(args: argparse.Namespace) -> Path:
    """The features folder a command's --features and --weights name."""
    return Path(args.features).expanduser() if args.features else features_dir(args.weights)


def training_prompts(seed: int = 0) -> list[str]:
    """The training prompts' first turns."""
    return [r["prompt"] for r in training_rows(seed)]



def frequent_tokens(tokens: torch.Tensor, size: int) -> torch.Tensor:
    """The `size` most frequent token ids in `tokens` (negative entries are not tokens),
    most frequent first, ties to the lower id (fewer if fewer distinct tokens occur): the
    vocabulary subset a drafter scores."""
    ids, counts = torch.unique(tokens[tokens >= 0], return_counts=True)
    return ids[torch.argsort(counts, descending=True, stable=True)][:size].long()


def read_manifest(data: Path) -> dict:
    """How the shards in data were made (prompts, samples, seed); {} when there is no manifest."""
    path = Path(data) / "manifest.json"
    return json.loads(path.read_text()) if path.exists() else {}


def published(path: Path) -> str:
    """A local path as a model card shows it: the card is published, so no home folder in it."""
    return str(path).replace(str(Path.home()), "~")


def learned_from(args: argparse.Namespace) -> str:
    """The answers a training command read, as its model card names them, and the engine whose features it learned
    where that is not the float32 one."""
    engine = " with the 4-bit engine's features" if args.weights == "q4" else ""
    return published(Path(args.data).expanduser()) + engine


def command_line(argv) -> str:
    """The training command as typed, for the model card."""
    return "python -m paradec.train " + " ".join(sys.argv[1:] if argv is None else argv)


def load_shards(folder: Path, features: tuple[str, ...] = ("hidden", "fuse"),
                features_folder: Path | None = None, greedy: bool = False) -> list[dict]:
    """Every answers shard with the features asked for (paradec.train.answers; in `features_folder`, by
    default beside the answers): at 500k answer tokens the fused ones alone take ~6 GB, so a drafter that
    reads only the final hidden state loads only that. `greedy`: only the greedy answers' shards (sample 0)."""
    shards = sorted(Path(folder).glob("shard-s0-*.safetensors" if greedy else "shard-*.safetensors"))
    if not shards:
        raise FileNotFoundError(f"no self-distillation data in {folder}: run `python -m paradec.train data` first")
    out = []
    for s in shards:
        feats = features_of(s, Path(folder if features_folder is None else features_folder))
        if not feats.exists():
            raise FileNotFoundError(f"{s} has no features yet: run `python -m paradec.train data` (it adds them)")
        with safe_open(str(feats), "pt") as f:
            out.append({**read_answers(s), **{k: f.get_tensor(k) for k in features}})
    return out


def share(text: str) -> float:
    """--train-fraction's value: a share in (0, 1]."""
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"a share in (0, 1], not {text}")
    return value


def shards_of(args: argparse.Namespace, features: tuple[str, ...], greedy: bool = False) -> list[dict]:
    """The shards a training command's --data, --features and --train-fraction name (`greedy`: only the greedy
    answers')."""
    shards = load_shards(Path(args.data).expanduser(), features, features_of_args(args), greedy)
    return share_of(shards, args.train_fraction)


def share_of(shards: list[dict], fraction: float) -> list[dict]:
    """The shards' rows of every held-out prompt and of the first `fraction` of the training prompts, by their
    line in the prompt file. That file is in a seeded random order (paradec.train.prompts), so the first ones are a
    random share of every source and category, and a smaller share is part of a larger one."""
    if fraction >= 1:
        return shards
    training = sorted({int(p) for s in shards for p in s["prompt"] if not validation(int(p))})
    kept = set(training[: max(1, round(fraction * len(training)))])
    out = []
    for s in shards:
        rows = torch.tensor([validation(int(p)) or int(p) in kept for p in s["prompt"]], dtype=torch.bool)
        if rows.any():
            out.append({k: v[rows] for k, v in s.items()})
    return out
