"""Default tree and draft sizes for a page's controls: this CPU's (what the recorded runs used)
when replaying, the device's own (paradec.presets.Profile) for live runs, so a GPU Space opens
on GPU-sized trees without a hard-coded number in any page."""
from __future__ import annotations

from .sidebar import current


def defaults(method: str, cpu: dict) -> dict:
    """cpu: the page's values for this CPU; live runs replace those the device profile sizes."""
    if not current().live:
        return cpu
    from . import live  # only live mode reaches torch (it reads the device's properties)

    return {**cpu, **live.sized(method)}
