"""Loading a target: the embedded SmolLM2-135M-Instruct, a Hugging Face causal LM by id, or a local folder."""
from __future__ import annotations

from pathlib import Path

import torch

from ..core.errors import first_line
from ..traces import files
from . import devices
from .embedded import EMBEDDED, EMBEDDED_NAME, embedded_path
from .loaded import Loaded, ModelError, with_fast


def load(spec: str | None = None, device: str | None = None, dtype: str | None = None, fast: bool = True,
         weights: str = "f32") -> Loaded:
    """Load a causal LM and its tokenizer: 'embedded' (default), a hub id or a local folder. fast: decode
    with paradec's lean CPU forward where it applies (with_fast); False: the model's own forward. weights: f32,
    or q4: a GGUF file's own blocks on the CPU (paradec.models.gguf; gguf.pick_weights says what runs)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from . import gguf

    if gguf.pick_weights(spec, device, weights, dtype) == "q4":
        return gguf.load_q4(spec, device, dtype)

    device = devices.pick_device(device)
    dtype = devices.pick_dtype(device, dtype)
    spec = spec or EMBEDDED
    path, name = (embedded_path(), EMBEDDED_NAME) if spec == EMBEDDED else (spec, spec)
    if spec.startswith(("/", ".", "~")) and not Path(spec).expanduser().is_dir():  # a path, not a hub id
        raise ModelError(f"cannot load model {spec!r}: no such folder")
    try:
        files.only_regular(path)  # a FIFO among a local folder's files would block its reader forever
        tok = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
        model, info = AutoModelForCausalLM.from_pretrained(path, dtype=devices.DTYPES[dtype], trust_remote_code=False,
                                                           output_loading_info=True)
    except Exception as e:  # files from the user or the hub: whatever their readers fail with is one line
        raise ModelError(f"cannot load model {spec!r}: {first_line(e)}") from None
    if info["missing_keys"]:  # transformers would fill them with random numbers and decode noise
        raise ModelError(f"cannot load model {spec!r}: its weights lack {len(info['missing_keys'])} of the "
                         "model's tensors (not this model's weights file)")
    if not _moved(model, device):
        del model  # its weights half on the device: drop them before giving the memory back
        devices.free_memory()
        raise ModelError(f"cannot load model {spec!r}: out of memory on {device} (choose a smaller model or preset)")
    loaded = Loaded(model.eval(), tok, name, device, dtype, source=spec)
    return with_fast(loaded) if fast else loaded


def _moved(model, device: str) -> bool:
    """Move the weights to the device; False when it runs out of memory. The error is only noted:
    its traceback would keep the half-moved weights alive through devices.free_memory()."""
    try:
        model.to(device)
    except torch.OutOfMemoryError:
        return False
    return True


def float32_sibling(target: Loaded) -> Loaded:
    """The float32 engine's copy of a 4-bit target (for what needs float32 weights: cllm's LoRA deltas merged into
    them, bench's ar_torch), loaded from the same spec; a float32 target is its own."""
    if target.weights != "q4":
        return target
    return load(target.source, "cpu", "float32", weights="f32")
