"""Which device and dtype a model is loaded on, and giving a failed load's memory back."""
from __future__ import annotations

import gc

import torch

from ..tuning.presets import device_info, dtype_for
from .loaded import ModelError

DEVICES = ("cuda", "mps", "cpu")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


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


def free_memory() -> None:
    """Give a failed run's or load's memory back: reference cycles collected, then the CUDA caching
    allocator's free blocks returned to the device (other processes and models can use them)."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
