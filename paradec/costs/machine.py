"""This machine on the roofline: a short probe of its float32 matrix-product speed and memory
bandwidth (under a second or two, cached as JSON), and a description for benchmark results.

torch is imported inside the functions that need it, so paradec.costs.roofline's users (the app's
pages) can read a cached probe without it."""
from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

from ..traces import files
from .roofline import Hardware

PROBE_SECONDS = 0.25  # per measurement; two measurements plus warm-up stay well under 2 s
MATMUL = 512  # a 512 x 512 float32 product: 268 MFLOP, big enough for the BLAS kernels' full speed
COPY_BYTES = 64 * 2**20  # far larger than any cache, so the copy runs at DRAM speed


def cpu_field(key: str) -> str | None:
    """The first value of `key` in /proc/cpuinfo ("model name", "cpu family"...); None where there is none."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                name, _, value = line.partition(":")
                if name.strip() == key:
                    return value.strip()
    except OSError:
        pass
    return None


def cpu_name() -> str:
    return cpu_field("model name") or platform.processor() or platform.machine()


def describe() -> dict:
    """What a benchmark ran on: CPU, cores, torch's threads, accelerator, versions."""
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"cpu": cpu_name(), "cores": os.cpu_count(), "torch_threads": torch.get_num_threads(), "gpu": gpu,
            "platform": platform.platform(), "python": platform.python_version(), "torch": torch.__version__}


def _best(fn, seconds: float) -> float:
    """The fastest of as many runs of fn as fit in `seconds`: the machine at its best, so that
    a busy moment does not read as a slow chip."""
    fn()  # warm-up: first calls allocate and pick kernels
    best, end = float("inf"), time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def probe(threads: int = 1, seconds: float = PROBE_SECONDS) -> dict:
    """Measure float32 FLOP/s (a matrix product) and bandwidth (a copy: read + write) on
    `threads` torch threads. Returns the JSON-ready record."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a, b = torch.randn(MATMUL, MATMUL), torch.randn(MATMUL, MATMUL)
        flops = 2 * MATMUL**3 / _best(lambda: torch.mm(a, b), seconds)
        src = torch.empty(COPY_BYTES // 4)
        dst = torch.empty_like(src)
        bandwidth = 2 * COPY_BYTES / _best(lambda: dst.copy_(src), seconds)
    finally:
        torch.set_num_threads(before)
    return {"cpu": cpu_name(), "cores": os.cpu_count(), "threads": threads, "float32_flops": flops,
            "bandwidth": bandwidth, "measured": time.strftime("%Y-%m-%d %H:%M")}


def hardware(record: dict, name: str = "This machine") -> Hardware:
    threads = f"{record['threads']} thread" + ("s" if record["threads"] > 1 else "")
    return Hardware(f"{name} ({threads})", {"float32": record["float32_flops"]}, record["bandwidth"],
                    f"measured {record['measured']} on {record['cpu']}: a {MATMUL}x{MATMUL} float32 matrix "
                    f"product and a {COPY_BYTES // 2**20} MiB copy, the best of {PROBE_SECONDS} s each")


def this_machine(cache_dir: Path, threads: int = 1) -> Hardware:
    """The probe's result for this CPU and thread count, measured at first use, then cached."""
    path = Path(cache_dir) / f"machine-{threads}thread.json"
    try:
        record = _read(path)
        if record.get("cpu") == cpu_name() and record.get("cores") == os.cpu_count():
            return hardware(record)
    except (OSError, ValueError):
        pass  # no cache yet, or an unreadable one: measure again
    record = probe(threads)
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(path, json.dumps(record))
    return hardware(record)


def recorded(path: Path) -> Hardware:
    """The machine that timed the shipped traces: its probe, saved when they were recorded.
    Reading it needs no torch, so a page of recorded runs opens on it at once."""
    return hardware(_read(path), "Recording machine")


def _read(path: Path) -> dict:
    return json.loads(files.read_regular(path, 2**16))  # a probe is a few hundred bytes
