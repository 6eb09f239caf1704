"""paradec's CPU extension for the few rows a decode step feeds (paradec/cpu/csrc): the matrix products
(small_gemm.cpp, its arithmetic in gemm_math.h), the 4-bit products over a GGUF file's blocks (quant.cpp,
quant_math.h), the rest of a decoder layer (layer.cpp: norm, rotary and cache write, attention, SiLU-gate) and
batched decoding's attention step for several sequences (batch.cpp; their shared arithmetic in layer_math.h).
selftest.cpp checks the arithmetic headers without Python, on any platform gcc targets.

Built once per machine with the machine's C++ compiler (-O3 -march=native -fopenmp, ~17 s on 2 cores) into
paradec's cache folder, keyed by the sources, torch's version and the CPU, then loaded in a second.
`python -m paradec.cpu.kernels` builds and checks it (the install runs it); without a compiler the fast CPU
path runs on torch's own matrix products instead, and `why_not()` says why.

PARADEC_KERNEL, read here only, says whether the kernel must be there: auto (the default) builds it and falls
back to torch's products when it cannot; require makes a failed build an error (make test and CI: a test of
the kernel that cannot run fails rather than passing without testing it); off never builds it."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import platform
import sys
import threading
import time
from pathlib import Path

CSRC = Path(__file__).parent / "csrc"
# module.cpp first: the longest to compile (pybind11 and torch's casters, ~10 s), and ninja starts the files in
# this order; last, it started after the others had taken both cores.
SOURCES = [CSRC / name for name in ("module.cpp", "small_gemm.cpp", "layer.cpp", "batch.cpp", "quant.cpp")]
HEADERS = [CSRC / name for name in ("ops.h", "vec.h", "gemm_math.h", "layer_math.h", "quant_math.h")]
# -fopenmp: torch's parallel_for is inline, so it runs on torch's threads only when the kernel is compiled with
# OpenMP (torch's own libgomp is the one loaded, so torch.set_num_threads applies); last: one thread.
BUILDS = (("", ["-O3", "-march=native", "-fopenmp"], ["-fopenmp"]), ("_serial", ["-O3", "-march=native"], []))
_building = threading.Lock()  # one build at a time: two sessions of the app may ask at once
COMPLAINTS = ("error:", "not found", "no such file")  # a compiler's, a missing compiler's (dash, bash)
SWITCH = "PARADEC_KERNEL"
MODES = ("auto", "require", "off")


class KernelError(RuntimeError):
    """PARADEC_KERNEL=require and the kernel cannot be built, or PARADEC_KERNEL is none of MODES (one line)."""


def mode() -> str:
    """PARADEC_KERNEL's value, auto when unset; read at each use, so a test can set it for one call."""
    value = os.environ.get(SWITCH, "").strip() or "auto"
    if value not in MODES:
        raise KernelError(f"{SWITCH}={value[:40]!r} is none of {', '.join(MODES)}")
    return value


def _cpu() -> str:
    """What -march=native compiles for: a kernel built on another CPU may use instructions this one lacks."""
    try:
        info = Path("/proc/cpuinfo").read_text(errors="replace")
        flags = next((line for line in info.splitlines() if line.startswith(("flags", "Features"))), "")
    except OSError:
        flags = ""
    return f"{platform.machine()} {flags}"


def _name() -> str:
    import torch

    sources = b"".join(p.read_bytes() for p in [*SOURCES, *HEADERS])
    # The folder too: torch's builder rebuilds when the same name's sources sit at other paths, so two clones on
    # one machine (a fresh-clone test beside a working tree) rebuilt each other's kernel, a minute each time.
    key = sources + str(CSRC).encode() + torch.__version__.encode() + _cpu().encode() + repr(BUILDS).encode()
    digest = hashlib.sha256(key).hexdigest()
    return f"paradec_small_gemm_{digest[:12]}"


def kernel():
    """The loaded extension (pack, linear), built at most once; None under PARADEC_KERNEL=off, or when it cannot
    be built here under auto. Under require a failed build raises KernelError, naming why."""
    chosen = mode()
    if chosen == "off":
        return None
    loaded, why = _load()
    if loaded is None and chosen == "require":
        raise KernelError(f"{SWITCH}=require and paradec's C++ kernel cannot be built here: {why}")
    return loaded


@functools.lru_cache(maxsize=1)
def _load():
    from torch.utils.cpp_extension import load

    from ..cache import cache_dir

    why = ""
    with _building:
        for suffix, cflags, ldflags in BUILDS:
            name = _name() + suffix
            folder = cache_dir() / "kernels" / name
            try:
                folder.mkdir(parents=True, exist_ok=True)
                with _somewhere_to_flush():
                    return load(name, [str(p) for p in SOURCES], extra_cflags=cflags, extra_ldflags=ldflags,
                                build_directory=str(folder), verbose=False), ""
            except Exception as e:  # noqa: BLE001 - no compiler, a failed build: the next, or torch's own products
                why = _why(e)
    return None, why


@contextlib.contextmanager
def _somewhere_to_flush():
    """torch's builder flushes sys.stdout before it runs ninja; with fd 1 closed before Python started (`run >&-`)
    sys.stdout is None, so the build gets a null sink (the CLI then says it cannot write its output)."""
    if sys.stdout is not None:
        yield
        return
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        yield


def _why(e: Exception) -> str:
    """A failed build in one line: the first complaint in ninja's log (a missing compiler, a compile error),
    which its last line ("build stopped: subcommand failed") does not name; else the last line."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()] or [""]
    said = next((line for line in lines if any(m in line.lower() for m in COMPLAINTS)), lines[-1])
    return f"{type(e).__name__}: {said[:200]}"


def state() -> str:
    """This process's kernel, never building it: "loaded", "off", "not tried" (nothing has asked for it yet), or
    why it could not be built. For what a page or a health check shows: it imports no torch."""
    if mode() == "off":
        return "off"
    if not _load.cache_info().currsize:
        return "not tried"
    return _load()[1] or "loaded"


def why_not() -> str:
    """Why the kernel is not available ("" when it is)."""
    return f"{SWITCH}=off" if mode() == "off" else _load()[1]


def main() -> int:
    import torch

    t0 = time.perf_counter()
    try:
        k = kernel()
    except KernelError as e:
        print(f"paradec.cpu.kernels: {e}", file=sys.stderr)
        return 1
    if k is None:
        print(f"paradec.cpu.kernels: not built ({why_not()}); the fast CPU path uses torch's matrix products",
              file=sys.stderr)
        return 0  # not an install failure: every method still runs
    w, x = torch.randn(37, 53), torch.randn(7, 53)
    err = float((k.linear(x, k.pack(w), 37) - x @ w.T).abs().max())
    print(f"paradec.cpu.kernels: built and loaded in {time.perf_counter() - t0:.1f} s (max error {err:.1e})",
          file=sys.stderr)
    return 0 if err < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
