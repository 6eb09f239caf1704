"""The one drafter interface: every method is a Drafter, the decode loop never asks which. The interface itself
proposes nothing: it is the AR baseline (catalog: "ar").

A drafter object belongs to one run (it may hold a KV cache of its own); the models it
reads are shared and never modified.
"""
from __future__ import annotations

import torch

from .records import Record
from .sampling import Sampler
from .steps import Draft, Verified


class Drafter:
    """Proposes nothing: with this drafter the loop is plain autoregressive decoding."""

    name = "ar"
    # Target layers whose hidden states the drafter reads after each verify pass (Medusa and
    # EAGLE draft from the target's features): indices into the model's hidden_states tuple,
    # -1 = the final, normed layer. Empty: none are returned.
    hidden_layers: tuple[int, ...] = ()

    def __init__(self):
        self.params: dict = {}  # the method's parameters, as given (recorded in traces)

    @staticmethod
    def lossy(params: dict) -> str:
        """Why these parameters make sampling lossy (the output distribution is not exactly
        the target's), or "" when they do not. The CLI warns; traces and pages label it."""
        return ""

    @staticmethod
    def target_deltas(params: dict) -> str | None:
        """The folder of LoRA deltas this method decodes with (a fine-tuned copy of the target,
        made by paradec.models.lora.target_for; the class then names it in `label` and says how to train
        the deltas in `train_command`), or None: it decodes on the target as loaded."""
        return None

    def begin(self, prompt_ids: list[int]) -> None:
        """A new run starts from these prompt tokens."""

    def end(self) -> None:
        """The run is over (done, or its consumer stopped reading): let go of what begin() started."""

    def propose(self, ctx: list[int], sampler: Sampler, gen: torch.Generator | None) -> Draft:
        """ctx = every committed token, the pending one (ctx[-1]) included."""
        return Draft()

    def commit(self, ctx: list[int], draft: Draft, accepted: list[int], verified: Verified) -> None:
        """Feedback after a step: ctx now holds the newly committed tokens too; accepted lists
        the node indices of the accepted path; verified holds the verify pass's outputs."""

    def record(self, draft: Draft, outcome) -> Record | None:
        """The step's record, asked once after commit(): draft.record, or, for a drafter that learns
        more in the verify pass (what commit added, what acceptance decided: outcome, a
        paradec.core.verify.Outcome), a completed copy of it. Records are frozen: never changed in place."""
        return draft.record
