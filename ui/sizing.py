"""Default settings for a page's controls: the method's own defaults (paradec.catalog) under the settings
tuned for the recording machine's kind (assets/presets/cpu.json, what the recorded runs used) when replaying,
the device's own (paradec.tuning.presets.Profile, its tuned preset included) for live runs, so a live run starts
on the settings the recorded ones used, and a GPU Space opens on GPU-sized trees without a hard-coded number
in any page."""
from __future__ import annotations

from paradec import catalog
from paradec.tuning import presets

from . import offered
from .sidebar import current


def defaults(method: str) -> dict:
    """The method's defaults; live runs replace those the device profile sizes, then those the operator's
    preset file sets (PARADEC_PRESET)."""
    cpu = {**catalog.method(method).defaults(), **presets.tuned("cpu")[0].get(method, {})}
    if not current().live:
        return cpu
    from . import live  # only live mode reaches torch (it reads the device's properties)

    return {**cpu, **live.sized(method), **offered.preset_settings(method)}
