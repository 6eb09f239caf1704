"""A loaded model: the target or draft a run decodes with, and the one error loading gives the user.

Loaded models are put in eval mode once and afterwards only read: runs keep their own KV caches, so one loaded
model can serve many runs and threads."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass


class ModelError(RuntimeError):
    """A model that cannot be loaded; the message is one line for the user."""


@dataclass
class Loaded:
    model: object
    tokenizer: object
    name: str  # what the trace records as the model id
    device: str
    dtype: str
    deltas: str = ""  # folder of the LoRA deltas merged into this copy (paradec.models.lora); "" = as loaded
    fast: object = None  # paradec.cpu.fast.FastTarget, the lean CPU forward every run decodes with; None: its own
    weights: str = "f32"  # q4: a GGUF's own blocks (paradec.models.gguf; model is a paradec.cpu.quant.QuantModel)
    source: str = ""  # the spec it was loaded from (the 4-bit target's float32 sibling loads from it)

    @property
    def decoder(self):
        """What the decode loop runs (AR and every verify pass alike): the fast forward where there is one."""
        return self.fast if self.fast is not None else self.model

    @property
    def view(self):
        """What drafters read of this target (paradec.cpu.view): the same interface at either precision."""
        from ..cpu.view import HFView

        return self.model if self.weights == "q4" else HFView(self.model, self.fast)


def with_fast(loaded: Loaded) -> Loaded:
    """The same target with the lean CPU forward (paradec.cpu.fast) where it applies: Llama-family models on
    the CPU in float32. Packing the weights takes about a second; the kernel's one build per machine
    (paradec.cpu.kernels) about 17 s."""
    from ..cpu.fast import FastTarget

    if FastTarget.supports(loaded.model, loaded.device, loaded.dtype):
        return loaded
    return dataclasses.replace(loaded, fast=FastTarget(loaded.model))
