"""The backend's request schema: one definition for every server that speaks paradec's HTTP API
(`python -m paradec serve`, paradec.serving.serve, and its Ray Serve deployment, paradec.serving.ray_serve)."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from .. import catalog


class _Sampling(BaseModel):
    """The decoding settings every request that decodes carries."""
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)  # a typo or "64" for 64: an error

    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0


class PromptRequest(_Sampling):
    """What every request that decodes a prompt carries."""
    prompt: str


class _Method(BaseModel):
    """What a run of one of paradec's methods carries besides its prompt(s)."""
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    method: str
    top_k: int = 0
    params: dict[str, str | bool | int | float] = {}
    draft: str | None = None  # sps: self:N, trained (the embedded model's), or one named at start-up
    model: str | None = None  # which loaded target (default: the first)
    weights: str | None = None  # q4 or f32: the target's weights as the run expects them (checked, never loaded)
    chat: bool = True


class RunRequest(PromptRequest, _Method):
    """POST /run."""


class BatchRequest(_Sampling, _Method):
    """POST /batch: several prompts decoded as one batch (every target forward shared; paradec.run.decode_batch
    caps their number); each sequence's tokens are the ones its prompt gets alone."""
    prompts: list[str]


class EngineRequest(PromptRequest):
    """POST /engine: a prompt for one of the engine peers named at start-up (--engine)."""
    engine: str


def method_json(m: catalog.Method) -> dict:
    """A method's description as the service gives it (GET /methods)."""
    params = [{"name": p.name, "type": p.kind.__name__, "default": p.default, "help": p.help, "low": p.low,
               "high": p.high, "choices": list(p.choices)} for p in m.params]
    return {"name": m.name, "family": m.family, "summary": m.summary, "lossless": m.lossless, "needs": m.needs,
            "params": params}


def with_methods(schema: dict) -> dict:
    """A request's JSON schema with the methods it may name listed (the catalogue's, when the app is made)."""
    if "method" in schema.get("properties", {}):
        schema["properties"]["method"]["enum"] = list(catalog.METHODS)
    return schema
