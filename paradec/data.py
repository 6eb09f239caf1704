"""Prompt sets: Spec-Bench rows and the train / held-out split that keeps every prompt
paradec benchmarks on out of the drafters' training data."""
from __future__ import annotations

import errno
import json
from pathlib import Path

from .traces.files import read_regular

ASSETS = Path(__file__).resolve().parents[1] / "assets"
# Spec-Bench's 480 prompts, shipped in the repository (assets/data/README.md: origin and licence)
SPECBENCH = ASSETS / "data" / "specbench_questions.jsonl"
# The self-distillation prompts (python -m paradec.train prompts; none from the held-out split)
TRAIN_PROMPTS = ASSETS / "data" / "train_prompts.jsonl"

SPLITS = ("all", "train", "heldout")
MAX_BYTES = 256 * 2**20  # prompt sets are kilobytes (Spec-Bench: 480 questions in 700 KB)


def split_of(row: dict) -> str:
    """Every fourth Spec-Bench question (question_id % 4 == 1) is held out: about 120 prompts
    spread over all 13 categories. Rows without a question_id are training prompts."""
    qid = row.get("question_id")
    return "heldout" if isinstance(qid, int) and qid % 4 == 1 else "train"


def read_jsonl(path: str | Path) -> list[dict]:
    """Rows of a JSONL file; OSError for a FIFO, a device or a folder (refused unread) and for a file
    over MAX_BYTES."""
    data = read_regular(path, MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise OSError(errno.EFBIG, f"larger than {MAX_BYTES // 2**20} MiB")
    return [json.loads(line) for line in data.decode("utf-8").split("\n") if line.strip()]


def first_turn(row: dict) -> str | None:
    """A row's prompt: its `prompt`, or the first of Spec-Bench's `turns`."""
    turns = row.get("turns")
    prompt = row.get("prompt") or (turns[0] if isinstance(turns, list) and turns else None)
    return prompt if isinstance(prompt, str) and prompt.strip() else None
