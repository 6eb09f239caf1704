"""The draft a run decodes with: a trained one, a model by id or folder, or the target's own first layers."""
from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

from ..core.errors import first_line
from .devices import DTYPES
from .embedded import EMBEDDED, EMBEDDED_NAME
from .loaded import Loaded, ModelError, with_fast
from .loading import load

TRAINED = "trained"


def load_draft(spec: str, target: Loaded) -> Loaded:
    """A draft model on the target's device and dtype. 'trained' is the draft trained for the
    embedded model (assets/drafters/sps-smollm2), 'trained:DIR' one trained elsewhere; 'self:N'
    is the target's own first N layers with its final norm and LM head: an untrained early-exit
    draft that needs no download."""
    if spec == TRAINED or spec.startswith(TRAINED + ":"):
        return _trained(spec, target)
    if not spec.startswith("self:"):  # another model, in float32 beside a 4-bit target
        return load(spec, target.device, target.dtype, fast=target.fast is not None or target.weights == "q4")
    try:
        layers = int(spec[5:])
    except ValueError:
        raise ModelError(f"draft {spec!r}: expected self:N with N a number of layers") from None
    return truncated(target, layers)


def draft_for(draft: str | None, model: str | None, needs_draft: bool) -> str | None:
    """The draft a run loads: the one named, or for a method that needs one on the embedded model, its trained
    draft. Fails before any weights are read when another target comes without a draft."""
    spec = draft or (default_draft(model) if needs_draft else None)
    if needs_draft and not spec:
        raise ModelError("sps needs a draft model for this target (--draft ID_OR_PATH or self:N)")
    return spec


def default_draft(model_spec: str | None) -> str | None:
    """The draft sps uses when none is named: the trained one, for the embedded model only."""
    return TRAINED if (model_spec or EMBEDDED) == EMBEDDED else None


def _trained(spec: str, target: Loaded) -> Loaded:
    from . import draft_model

    folder = Path(spec.partition(":")[2] or draft_model.ASSET).expanduser()
    if target.weights == "q4":
        return _trained_q4(spec, target, folder)
    try:
        model = draft_model.load(target.model, folder)
    except Exception as e:  # a file from the user: whatever its reader fails with is one line
        raise ModelError(f"draft {spec!r}: {first_line(e)}") from None
    name = f"{EMBEDDED_NAME} trained draft" if spec == TRAINED else f"trained draft {folder}"
    loaded = Loaded(model, target.tokenizer, f"{name} ({model.config.num_hidden_layers} layers, "
                    f"{model.subset.ids.numel()} tokens)", target.device, target.dtype)
    if target.fast is None:  # a draft is decoded as its target is
        return loaded
    from ..cpu.fast import FastTarget

    return dataclasses.replace(loaded, fast=FastTarget.of_draft(model))


def _trained_q4(spec: str, target: Loaded, folder: Path) -> Loaded:
    """The trained draft beside a 4-bit target: its own layers in float32, the target's embedding and LM-head rows."""
    from . import draft_model

    try:
        fast = draft_model.fast_draft(target.view, folder)
    except Exception as e:  # a file from the user: whatever its reader fails with is one line
        raise ModelError(f"draft {spec!r}: {first_line(e)}") from None
    name = f"{EMBEDDED_NAME} trained draft" if spec == TRAINED else f"trained draft {folder}"
    return Loaded(fast, target.tokenizer, f"{name} ({fast.config.num_hidden_layers} layers, {fast.lm_head.n} tokens)",
                  "cpu", "float32", fast=fast, weights="q4")


def truncated(target: Loaded, layers: int) -> Loaded:
    """A copy of the target cut after `layers` decoder layers (the target stays untouched)."""
    total = target.model.config.num_hidden_layers
    if not 1 <= layers < total:
        raise ModelError(f"draft self:{layers}: the target has {total} layers, choose 1 to {total - 1}")
    if target.weights == "q4":  # the same packed weights, shared
        cut = target.fast.truncated(layers)
        return Loaded(cut, target.tokenizer, f"{target.name} (first {layers} layers)", "cpu", "float32", fast=cut,
                      weights="q4")
    cfg = copy.deepcopy(target.model.config)
    cfg.num_hidden_layers = layers
    if getattr(cfg, "layer_types", None):
        cfg.layer_types = cfg.layer_types[:layers]
    dropped = tuple(f".layers.{i}." for i in range(layers, total))
    state = {k: v for k, v in target.model.state_dict().items() if not any(d in k for d in dropped)}
    model = type(target.model)(cfg).to(DTYPES[target.dtype])
    model.load_state_dict(state, strict=False)
    model.to(target.device).eval()
    loaded = Loaded(model, target.tokenizer, f"{target.name} (first {layers} layers)", target.device, target.dtype)
    return with_fast(loaded) if target.fast is not None else loaded  # a draft is decoded as its target is
