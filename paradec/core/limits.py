"""How large a step's record may be, and the value checks its lists share: the step records (records.py) and the
trace checker (paradec.traces.trace_check) both refuse what a page could not draw with these. Standard library only."""
from __future__ import annotations

MAX_WINDOW = 256  # Lookahead's window tokens in one pass (32 columns x 7 levels at most)
MAX_TOP = 64  # (token, probability) pairs of one distribution (runs keep 10)
MAX_LIST = 4096  # entries of any other list in a step's record (EAGLE-2's drafted candidates: 16 x 16 x 16)


def number(x) -> bool:
    return type(x) in (int, float)  # type(): JSON true is not the number 1


def prob(x, what: str, optional: bool = True) -> None:
    """ValueError unless x is a probability (or None, where optional)."""
    if (x is None and optional) or (number(x) and 0 <= x <= 1):
        return
    raise ValueError(f"{what} must be a probability between 0 and 1, got {x!r}")


def tops(pairs, what: str) -> None:
    """ValueError unless pairs is None or a short list of [token id, probability] pairs."""
    if pairs is None:
        return
    if not isinstance(pairs, list) or len(pairs) > MAX_TOP:
        raise ValueError(f"{what} must be a list of at most {MAX_TOP} [token, probability] pairs")
    for pair in pairs:
        if not (isinstance(pair, list) and len(pair) == 2 and type(pair[0]) is int and pair[0] >= 0):
            raise ValueError(f"{what} must hold [token, probability] pairs, got {str(pair)[:40]}")
        prob(pair[1], what, optional=False)
