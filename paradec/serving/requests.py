"""The backend's request schema: one definition for every server that speaks paradec's HTTP API
(`python -m paradec serve`, paradec.serving.serve, and its Ray Serve deployment, paradec.serving.ray_serve)."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class PromptRequest(BaseModel):
    """What every request that decodes a prompt carries."""
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)  # a typo or "64" for 64: an error

    prompt: str
    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0


class RunRequest(PromptRequest):
    """POST /run."""
    method: str
    top_k: int = 0
    params: dict[str, str | bool | int | float] = {}
    draft: str | None = None  # sps: self:N, trained (the embedded model's), or one named at start-up
    model: str | None = None  # which loaded target (default: the first)
    chat: bool = True


class EngineRequest(PromptRequest):
    """POST /engine: a prompt for one of the engine peers named at start-up (--engine)."""
    engine: str
