"""Methods at run time: a name -> its drafter class (where paradec.catalog's description says it is), and
--set KEY=VALUE strings and typed values parsed and checked against the description. A new method is a
drafter file and its description: nothing here changes."""
from __future__ import annotations

import importlib
import importlib.util

from . import catalog
from .drafters.base import Drafter
from .traces import files


class InputError(ValueError):
    """Bad user input; the message is one line for the user."""


def shown(value, limit: int = 60) -> str:
    """A value as an error message echoes it: its repr, cut short (a 5,000-digit value is not a message), and
    a huge integer in a few words (repr() of one past 4,300 digits raises)."""
    if isinstance(value, int) and abs(value) >= 10**30:
        return f"a number of about {int(value.bit_length() * 0.30103)} digits"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def one_line(message: str, most: int) -> str:
    """An error's message on one line of at most `most` characters (one that quotes a huge value is cut)."""
    message = " ".join(message.splitlines())
    return message if len(message) <= most else message[:most - 3] + "..."


def check_writable(path, what: str) -> None:
    """InputError unless the output can go to path (a regular file or a new name): asked before the work."""
    try:
        files.writable(path)
    except OSError as e:
        raise InputError(f"cannot write {what} {path}: {e.strerror or e}") from None


def check_method(method: str) -> type[Drafter]:
    """The method's drafter class; InputError for an unknown method."""
    module, _, cls = describe(method).drafter.partition(":")
    library = f"paradec.drafters.{module}"
    return getattr(importlib.import_module(library if importlib.util.find_spec(library) else module), cls)


def describe(method: str) -> catalog.Method:
    """The method's description (paradec.catalog); InputError for an unknown method."""
    try:
        return catalog.method(method)
    except ValueError as e:
        raise InputError(str(e)) from None


def needs_draft_model(method: str) -> bool:
    return describe(method).needs == "draft"


def weights_named(method: str, params: dict) -> dict[str, str]:
    """The parameters among params that name weights to read (a file, a folder, a hub id), with
    their values; the values that name none (the shipped weights, "none") are left out."""
    spare = {p.name: p.spare for p in describe(method).params if p.weights}
    return {k: v for k, v in params.items() if k in spare and v not in spare[k]}


def defaults(method: str) -> dict:
    """The method's parameters and their default values."""
    return describe(method).defaults()


def lossy(method: str, params: dict) -> str:
    """Why this method and these parameters do not keep the target's distribution ("" if they do)."""
    return check_method(method).lossy(params)


def parse_params(method: str, pairs: list[str] | dict, base: dict | None = None) -> dict:
    """KEY=VALUE strings (or a dict) -> typed, checked parameters; what they leave out comes from `base`
    (the device's sizes, see paradec.tuning.presets.Profile.params), then the method's defaults."""
    desc = describe(method)
    known = desc.defaults()
    items = pairs.items() if isinstance(pairs, dict) else [_split(p) for p in pairs]
    params = {**known, **{k: v for k, v in (base or {}).items() if k in known}}
    for key, value in items:
        if key not in known:
            choices = ", ".join(known) or "none"
            raise InputError(f"unknown parameter {shown(key)} for method {method!r} (its parameters: {choices})")
        param = desc.param(key)
        params[key] = _coerce(key, value, param.kind)
        try:
            param.check(params[key])
        except ValueError as e:
            raise InputError(f"{method}: {e}") from None
    return params


def given_params(method: str, pairs: list[str] | dict) -> dict:
    """Only the parameters given (KEY=VALUE strings or a dict), typed and checked: what they leave out
    stays out, for the device's sizes and then the defaults to fill (paradec.run.resolve_params)."""
    keys = list(pairs) if isinstance(pairs, dict) else [_split(p)[0] for p in pairs]
    typed = parse_params(method, pairs)
    return {k: typed[k] for k in keys}


def make_drafter(method: str, params: dict, draft_model=None, target_model=None) -> Drafter:
    desc, cls = describe(method), check_method(method)
    models = {"target_model": target_model} if desc.reads_target else {}
    try:
        if desc.needs == "draft":
            if draft_model is None:
                raise InputError(f"method {method!r} needs a draft model (--draft ID_OR_PATH)")
            return cls(draft_model, **models, **params)
        return cls(**models, **params)
    except ValueError as e:
        raise InputError(f"{method}: {e}") from None


def _split(pair: str) -> tuple[str, str]:
    key, sep, value = pair.partition("=")
    if not sep or not key:
        raise InputError(f"--set expects KEY=VALUE, got {shown(pair)}")
    return key.strip(), value.strip()


def _coerce(key: str, value, kind: type):
    if not isinstance(value, str):  # already typed (the app's widgets, a JSON request): check it
        if kind is float and type(value) is int:  # JSON writes 1.0 as 1
            return float(value)
        if type(value) is not kind:  # type(), not isinstance: True is not an int parameter
            raise InputError(f"parameter {key!r} expects {kind.__name__}, got {shown(value)}")
        return value
    try:
        if kind is bool:
            if value.lower() not in ("true", "false", "1", "0"):
                raise ValueError
            return value.lower() in ("true", "1")
        return kind(value) if kind in (int, float) else value
    except ValueError:
        raise InputError(f"parameter {key!r} expects {kind.__name__}, got {shown(value)}") from None
