"""Where paradec keeps what it makes once per machine: the converted embedded model, the CPU kernel, the
self-distillation data. Standard library only."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/paradec, or ~/.cache/paradec."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "paradec"
