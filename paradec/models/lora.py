"""LoRA weight deltas (Hu et al. 2021) and the fine-tuned targets they make.

A method that decodes on a fine-tuned copy of the target (cllm) says which deltas it needs
(Drafter.target_deltas); target_for() merges them into a separate copy of the base weights, so
the shared base model is never touched. Only a training process wraps a model (wrap()), and only
its own copy."""
from __future__ import annotations

import copy
import math
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from torch import nn

from .. import methods
from ..traces import files
from . import loading
from .loaded import Loaded, ModelError, with_fast

WEIGHTS = "adapter.safetensors"
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class LoRALinear(nn.Module):
    """base(x) + scale * B A x; B starts at zero, so training starts from the base model."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float, gen: torch.Generator):
        super().__init__()
        self.base, self.scale = base, alpha / rank
        a = torch.randn(rank, base.in_features, generator=gen) / math.sqrt(base.in_features)
        self.A = nn.Parameter(a.to(base.weight.device, base.weight.dtype))
        self.B = nn.Parameter(torch.zeros(base.out_features, rank, device=base.weight.device, dtype=base.weight.dtype))

    def forward(self, x):
        return self.base(x) + (x @ self.A.T @ self.B.T) * self.scale


def wrap(model: nn.Module, rank: int = 16, alpha: float = 32.0, seed: int = 0,
         projections: tuple[str, ...] = PROJECTIONS) -> dict[str, LoRALinear]:
    """Freeze the model and wrap its projections (the caller's own copy): module name -> wrapper."""
    for p in model.parameters():
        p.requires_grad_(False)
    gen = torch.Generator().manual_seed(seed)
    wrapped = {}
    for name, module in list(model.named_modules()):
        for child, sub in list(module.named_children()):
            if child in projections and isinstance(sub, nn.Linear):
                wrapped[f"{name}.{child}"] = LoRALinear(sub, rank, alpha, gen)
                setattr(module, child, wrapped[f"{name}.{child}"])
    return wrapped


def save(wrapped: dict[str, LoRALinear], folder: Path, metadata: dict) -> Path:
    """The deltas' factors in float16 (the base weights are never stored)."""
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for name, m in wrapped.items():
        tensors[f"{name}.A"] = m.A.detach().cpu().to(torch.float16).contiguous()
        tensors[f"{name}.B"] = m.B.detach().cpu().to(torch.float16).contiguous()
    scale = next(iter(wrapped.values())).scale
    with files.replacing(folder / WEIGHTS) as tmp:  # whole or not at all, and through a link to its target
        save_file(tensors, str(tmp), metadata={"scale": str(scale), **{k: str(v) for k, v in metadata.items()}})
    return folder / WEIGHTS


def read(folder: Path) -> tuple[dict[str, tuple[torch.Tensor, torch.Tensor]], float]:
    """-> (module name -> (A, B), scale); FileNotFoundError or ValueError when unusable."""
    path = Path(folder).expanduser() / WEIGHTS
    if not path.is_file():
        raise FileNotFoundError(f"no LoRA deltas at {path}")
    try:
        with safe_open(str(path), "pt") as f:
            meta = f.metadata() or {}
            tensors = {k: f.get_tensor(k) for k in f.keys()}
        scale = float(meta["scale"])
    except (OSError, KeyError, ValueError, SafetensorError) as e:
        raise ValueError(f"{path} is not a LoRA file ({type(e).__name__}: {e})") from None
    names = {k.rpartition(".")[0] for k in tensors}
    if not names or any(f"{n}.A" not in tensors or f"{n}.B" not in tensors for n in names):
        raise ValueError(f"{path} is not a LoRA file (no A/B factor pairs)")
    return {n: (tensors[f"{n}.A"], tensors[f"{n}.B"]) for n in sorted(names)}, scale


def merged(target: Loaded, folder: Path, label: str) -> Loaded:
    """A separate copy of the target with W + scale * B A in place of every wrapped W. Deltas merge into float32
    weights: a 4-bit target's float32 sibling is loaded for them (paradec.models.gguf), and the copy says so."""
    try:
        deltas, scale = read(folder)
    except (FileNotFoundError, ValueError) as e:
        raise ModelError(str(e)) from None
    if target.weights == "q4":
        target = loading.float32_sibling(target)
        label = f"{label}, float32: its deltas merge into float32 weights"
    model = copy.deepcopy(target.model)  # the shared base model stays as it was loaded
    modules = dict(model.named_modules())
    with torch.no_grad():
        for name, (a, b) in deltas.items():
            lin = modules.get(name)
            if not isinstance(lin, nn.Linear) or tuple(lin.weight.shape) != (b.shape[0], a.shape[1]):
                raise ModelError(f"the LoRA deltas in {folder} do not fit {target.name} (at {name})")
            delta = scale * (b.float() @ a.float())
            lin.weight.copy_((lin.weight.float() + delta.to(lin.weight.device)).to(lin.weight.dtype))
    tuned = Loaded(model.eval(), target.tokenizer, f"{target.name} + {label}", target.device, target.dtype,
                   deltas=str(Path(folder).expanduser().resolve()))
    return with_fast(tuned) if target.fast is not None else tuned  # decoded as the target is


def needed(method: str, params: dict) -> Path | None:
    """The folder of deltas this method decodes with, or None when it runs on the target as loaded."""
    folder = methods.check_method(method).target_deltas(params)
    return Path(folder).expanduser().resolve() if folder else None


def target_for(target: Loaded, method: str, params: dict) -> Loaded:
    """The model this method decodes on: the target itself, or a fine-tuned copy of it. Callers
    keep the result (a merge copies every weight), e.g. one per method and process."""
    folder = needed(method, params)
    if folder is None or target.deltas == str(folder):
        return target
    cls = methods.check_method(method)
    try:
        return merged(target, folder, cls.label)
    except ModelError as e:
        raise ModelError(f"{method}: {e} (train them with `{cls.train_command}`)") from None
