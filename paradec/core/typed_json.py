"""Dataclasses from JSON read from a file: the one checker the trace (paradec.traces.trace) and its step records
(paradec.core.records) are built with. A field the class does not have, a required one that is missing and a
value of the wrong JSON type fail here with a TypeError naming the field, so a bad file is refused when it
is loaded and never reaches a page. Standard library only: the app replays traces without torch."""
from __future__ import annotations

import functools
import types
import typing
from dataclasses import MISSING, fields, is_dataclass


def build(cls, d, where: str | None = None, required: set[str] | None = None):
    """cls(**d) for the dataclass cls, every value checked against its field's annotation (nested
    dataclasses, and lists of them, are built the same way). required: the fields d must have (default:
    those without a default value)."""
    where = where or cls.__name__
    if not isinstance(d, dict):
        raise TypeError(f"a {where} should be a JSON object, got {type(d).__name__}")
    hints, needed = _fields(cls)
    unknown = set(d) - set(hints)
    if unknown:
        raise TypeError(f"unknown field(s) {sorted(unknown)} in {where}")
    if required is None:
        required = needed
    missing = required - set(d)
    if missing:
        raise TypeError(f"a {where} needs the field(s) {sorted(missing)}")
    return cls(**{k: value(v, hints[k], f"{where}.{k}") for k, v in d.items()})


@functools.cache
def _fields(cls) -> tuple[dict, frozenset[str]]:
    """cls's annotations and its fields without a default, worked out once per class: get_type_hints evaluates
    every annotation anew, and took four fifths of loading a trace (2.3 s of a 3 MB file's 2.9 s)."""
    required = {f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}
    return typing.get_type_hints(cls), frozenset(required)


def value(v, hint, where: str):
    """v checked against an annotation: int, float (an int is one too, and stays an int), bool, str, dict,
    list, list[X], X | None, X | Y (the first that fits), a dataclass. JSON true is not the number 1."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if v is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:  # X | None: X's own message says what is wrong
            return value(v, options[0], where)
        for option in options:
            try:
                return value(v, option, where)
            except TypeError:
                pass
        raise TypeError(f"{where} should be {hint}, got {type(v).__name__}")
    if is_dataclass(hint):
        return build(hint, v, where)
    if (origin or hint) in (list, dict):
        if not isinstance(v, origin or hint):
            raise TypeError(f"{where} should be a {(origin or hint).__name__}, got {type(v).__name__}")
        return [value(x, args[0], where) for x in v] if origin is list else v
    if hint is float and type(v) is int:
        return v
    if type(v) is not hint:  # type(): JSON true is not the number 1
        raise TypeError(f"{where} should be {hint.__name__}, got {type(v).__name__}")
    return v
