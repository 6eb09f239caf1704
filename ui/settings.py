"""The sidebar's settings, as every page and the live runs read them (ui.sidebar draws the widgets)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    model: str  # 'embedded', a hub id or a local folder
    prompt: str
    temperature: float
    top_p: float
    max_new_tokens: int
    seed: int
    live: bool  # False: replay recorded traces; True: run the model on these settings
    backend: str = ""  # URL of `python -m paradec serve` that runs live traces ("": this process); the operator's
    weights: str = ""  # q4 or f32 for live runs ("": the default, the file's own 4-bit blocks on a CPU)
