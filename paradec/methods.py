"""The method registry: name -> drafter class, and --set KEY=VALUE parsing against the
drafter's own signature (so a new method declares its parameters once, in __init__)."""
from __future__ import annotations

import inspect

from .drafters.base import Drafter
from .drafters.cllm import Cllm
from .drafters.eagle import Eagle, Eagle2, Eagle3
from .drafters.early_exit import EarlyExit
from .drafters.jacobi import Jacobi
from .drafters.lookahead import Lookahead
from .drafters.medusa import Medusa
from .drafters.mirror import Mirror
from .drafters.pld import PromptLookup
from .drafters.sps import SpeculativeSampling

METHODS: dict[str, type[Drafter]] = {
    "ar": Drafter, "sps": SpeculativeSampling, "pld": PromptLookup, "jacobi": Jacobi, "lookahead": Lookahead,
    "medusa": Medusa, "eagle": Eagle, "eagle2": Eagle2, "eagle3": Eagle3,
    "early_exit": EarlyExit, "cllm": Cllm, "mirror": Mirror,
}
DRAFT_MODEL_ARG = "draft_model"  # a drafter that takes this argument needs a draft model
TARGET_MODEL_ARG = "target_model"  # a drafter that takes this one reads the target's weights (Medusa's LM head,
                                   # early exit's layers)


class InputError(ValueError):
    """Bad user input; the message is one line for the user."""


def check_method(method: str) -> type[Drafter]:
    if method not in METHODS:
        raise InputError(f"unknown method {method!r} (choose from {', '.join(METHODS)})")
    return METHODS[method]


def needs_draft_model(method: str) -> bool:
    return DRAFT_MODEL_ARG in inspect.signature(check_method(method).__init__).parameters


def weights_named(method: str, params: dict) -> dict[str, str]:
    """The parameters among params that name weights to read (a file, a folder, a hub id), with
    their values; the values that name none (the shipped weights, "none") are left out."""
    spare = check_method(method).weights
    return {k: v for k, v in params.items() if k in spare and v not in spare[k]}


def defaults(method: str) -> dict:
    """The method's parameters and their default values."""
    sig = inspect.signature(check_method(method).__init__)
    return {n: p.default for n, p in sig.parameters.items() if n not in ("self", DRAFT_MODEL_ARG, TARGET_MODEL_ARG)}


def lossy(method: str, params: dict) -> str:
    """Why this method and these parameters do not keep the target's distribution ("" if they do)."""
    return check_method(method).lossy(params)


def parse_params(method: str, pairs: list[str] | dict, base: dict | None = None) -> dict:
    """KEY=VALUE strings (or a dict) -> typed parameters; what they leave out comes from `base`
    (the device's sizes, see paradec.presets.Profile.params), then the method's defaults."""
    known = defaults(method)
    items = pairs.items() if isinstance(pairs, dict) else [_split(p) for p in pairs]
    params = {**known, **{k: v for k, v in (base or {}).items() if k in known}}
    for key, value in items:
        if key not in known:
            choices = ", ".join(known) or "none"
            raise InputError(f"unknown parameter {key!r} for method {method!r} (its parameters: {choices})")
        params[key] = _coerce(key, value, known[key])
    return params


def make_drafter(method: str, params: dict, draft_model=None, target_model=None) -> Drafter:
    cls = check_method(method)
    if TARGET_MODEL_ARG in inspect.signature(cls.__init__).parameters:
        params = {**params, TARGET_MODEL_ARG: target_model}
    try:
        if needs_draft_model(method):
            if draft_model is None:
                raise InputError(f"method {method!r} needs a draft model (--draft ID_OR_PATH)")
            return cls(draft_model, **params)
        return cls(**params)
    except ValueError as e:
        raise InputError(f"{method}: {e}") from None


def _split(pair: str) -> tuple[str, str]:
    key, sep, value = pair.partition("=")
    if not sep or not key:
        raise InputError(f"--set expects KEY=VALUE, got {pair!r}")
    return key.strip(), value.strip()


def _coerce(key: str, value, default):
    kind = type(default)
    if not isinstance(value, str):  # already typed (the app's widgets, a JSON request): check it
        if kind is float and type(value) is int:  # JSON writes 1.0 as 1
            return float(value)
        if type(value) is not kind:  # type(), not isinstance: True is not an int parameter
            raise InputError(f"parameter {key!r} expects {kind.__name__}, got {value!r}")
        return value
    try:
        if kind is bool:
            if value.lower() not in ("true", "false", "1", "0"):
                raise ValueError
            return value.lower() in ("true", "1")
        return kind(value) if kind in (int, float) else value
    except ValueError:
        raise InputError(f"parameter {key!r} expects {kind.__name__}, got {value!r}") from None
