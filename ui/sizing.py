"""Default tree and draft sizes for a page's controls: the method's own defaults (paradec.catalog: this
CPU's, what the recorded runs used) when replaying, the device's own (paradec.presets.Profile) for live runs,
so a GPU Space opens on GPU-sized trees without a hard-coded number in any page."""
from __future__ import annotations

from paradec import catalog

from . import offered
from .sidebar import current


def defaults(method: str) -> dict:
    """The method's defaults; live runs replace those the device profile sizes, then those the operator's
    preset file sets (PARADEC_PRESET)."""
    cpu = catalog.method(method).defaults()
    if not current().live:
        return cpu
    from . import live  # only live mode reaches torch (it reads the device's properties)

    return {**cpu, **live.sized(method), **offered.preset_settings(method)}
