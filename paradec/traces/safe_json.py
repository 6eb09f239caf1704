"""JSON from a file a visitor may have made: only numbers a page can compute with, and no nesting
deeper than a real trace's. Standard library only (trace replay uses it)."""
from __future__ import annotations

import json
import math

# Python would parse a number of 5,000 digits with a ValueError of its own, NaN and Infinity (not
# JSON, but Python writes them) would reach the pages' arithmetic, and 1e999 parses as infinity.
MAX_INT_DIGITS = 19  # 64-bit integers: token ids, counts and seeds all fit
MAX_DEPTH = 32  # a real trace nests 8 deep; copying or exporting recurses once per level


class Malformed(ValueError):
    """Valid JSON that holds what no trace may: a huge or non-finite number, or deep nesting."""


def loads(text: str | bytes):
    """json.loads with those limits. json.JSONDecodeError, UnicodeDecodeError or RecursionError
    ("[[[[..." exhausts the parser's stack) when it is not JSON at all; Malformed otherwise."""
    data = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    _check_depth(data)
    return data


def _check_depth(data) -> None:
    """Refuse nesting that json parsed but that would exhaust the stack later (export, asdict)."""
    todo = [(data, 1)]
    while todo:
        value, depth = todo.pop()
        if depth > MAX_DEPTH:
            raise Malformed(f"nested more than {MAX_DEPTH} deep")
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        todo.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise Malformed(f"the number {text[:20]}... is too large")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise Malformed(f"the number {text[:20]} is too large")
    return value


def _constant(name: str):
    raise Malformed(f"{name} is not a number a trace may hold")
