"""A reduced draft vocabulary (EAGLE-3's trick): drafters score only the most frequent target
tokens with a slice of the target's LM head.

On a CPU the LM head (49152 x 576 for the embedded model) costs about a fifth of a target
forward, so a drafter that runs it at every draft step cannot win. Scoring a subset of V'
tokens costs V'/V of that. The draft's q is then zero outside the subset, which keeps
rejection sampling exact: a token q never proposes is never tested."""
from __future__ import annotations

from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from ..traces import files

SUBSET_KEY = "subset_ids"  # the subset's ids, stored beside a drafter's own weights


class VocabSubset:
    def __init__(self, ids: torch.Tensor, vocab_size: int):
        """ids: (V',) target token ids the draft may propose, most frequent first."""
        if ids.numel() == 0 or int(ids.max()) >= vocab_size:
            raise ValueError("a vocabulary subset must be non-empty target token ids")
        self.ids = ids.long()
        self.vocab_size = vocab_size

    def head(self, lm_head_weight: torch.Tensor) -> torch.Tensor:
        """The rows of the target's LM head for the subset: (V', H). A copy, made once."""
        return lm_head_weight.index_select(0, self.ids.to(lm_head_weight.device)).clone()

    def expand(self, logits: torch.Tensor) -> torch.Tensor:
        """(..., V') subset logits -> (..., V) full-vocabulary logits, -inf outside the subset."""
        full = logits.new_full((*logits.shape[:-1], self.vocab_size), float("-inf"))
        return full.index_copy(-1, self.ids.to(logits.device), logits)


def save_weights(path: Path, tensors: dict[str, torch.Tensor], ids: torch.Tensor, metadata: dict) -> Path:
    """A subset drafter's own weights (float16: half the size, no measurable loss of acceptance)
    and its subset ids in one safetensors file; metadata values are stored as strings."""
    path.parent.mkdir(parents=True, exist_ok=True)
    out = {k: v.detach().cpu().to(torch.float16).contiguous() for k, v in tensors.items()}
    out[SUBSET_KEY] = ids.cpu().to(torch.int32)
    with files.replacing(path) as tmp:  # whole or not at all, and through a link to its target
        save_file(out, str(tmp), metadata={k: str(v) for k, v in metadata.items()})
    return path


def read_weights(path: Path, what: str, train_command: str) -> tuple[dict, dict[str, torch.Tensor], torch.Tensor]:
    """-> (metadata, the drafter's own tensors, the subset ids) of a file save_weights wrote."""
    if not path.exists():
        raise FileNotFoundError(f"no {what} at {path}: train one with `{train_command}`")
    files.only_regular(path)  # a FIFO would block safe_open forever
    with safe_open(str(path), "pt") as f:
        meta, state = f.metadata() or {}, {k: f.get_tensor(k) for k in f.keys()}
    return meta, state, state.pop(SUBSET_KEY).long()
