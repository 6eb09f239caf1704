"""Errors as the user reads them: one line."""
from __future__ import annotations


def first_line(e: Exception, limit: int = 200) -> str:
    """An error's first line, cut short: a reader's message may go on to list a file's tensors."""
    if isinstance(e, KeyError):  # str() of a KeyError is just the key
        return f"no {str(e)[:limit]} in it: not a file of this kind"
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:limit]
