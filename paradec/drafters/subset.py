"""A reduced draft vocabulary (EAGLE-3's trick): drafters score only the most frequent target
tokens with a slice of the target's LM head.

On a CPU the LM head (49152 x 576 for the embedded model) costs about a fifth of a target
forward, so a drafter that runs it at every draft step cannot win. Scoring a subset of V'
tokens costs V'/V of that. The draft's q is then zero outside the subset, which keeps
rejection sampling exact: a token q never proposes is never tested."""
from __future__ import annotations

import torch


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
