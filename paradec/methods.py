"""Methods at run time: a name -> its drafter class (where paradec.catalog's description says it is), and
--set KEY=VALUE strings and typed values parsed and checked against the description. A new method is a
drafter file and its description: nothing here changes."""
from __future__ import annotations

import importlib
import importlib.util

from . import catalog
from .core.drafter import Drafter
from .traces import files


class InputError(ValueError):
    """Bad user input; the message is one line for the user."""


def one_line(message: str, most: int) -> str:
    """An error's message on one line of at most `most` characters (one that quotes a huge value is cut), its
    control characters shown escaped (a file's name or contents may hold a terminal's escape sequences)."""
    message = files.printable(" ".join(message.splitlines()))
    return message if len(message) <= most else message[:most - 3] + "..."


def check_method(method: str) -> type[Drafter]:
    """The method's drafter class; InputError for an unknown method."""
    module, _, cls = describe(method).drafter.partition(":")
    library = f"paradec.drafters.{module}"  # a short name is a drafter file's; a dotted one is absolute
    dotted = "." in module or importlib.util.find_spec(library) is None
    return getattr(importlib.import_module(module if dotted else library), cls)


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


def parse_params(method: str, pairs: list[str] | dict) -> dict:
    """The parameters given (KEY=VALUE strings or a dict), typed and checked (paradec.catalog.parse): what they
    leave out stays out, for `resolve` to fill. InputError, one line, for a bad one."""
    try:
        return catalog.parse(describe(method), pairs)
    except ValueError as e:
        raise InputError(str(e)) from None


def resolve(method: str, given: dict, sized: dict | None = None) -> dict:
    """Every parameter's value: the given ones (parsed), then the device's sizes (paradec.tuning.presets
    Profile.params), then the defaults of the method's description, the only place defaults are written."""
    known = describe(method).defaults()
    return {**known, **{k: v for k, v in (sized or {}).items() if k in known}, **given}


def make_drafter(method: str, params: dict, draft_model=None, target_model=None) -> Drafter:
    """The method's drafter for a run, with parsed parameters (those left out take their defaults)."""
    desc, cls = describe(method), check_method(method)
    models = {"target_model": target_model} if desc.reads_target else {}
    try:
        if desc.needs == "draft":
            if draft_model is None:
                raise InputError(f"method {method!r} needs a draft model (--draft ID_OR_PATH)")
            return cls(draft_model, **models, **resolve(method, params))
        return cls(**models, **resolve(method, params))
    except ValueError as e:
        raise InputError(f"{method}: {e}") from None
