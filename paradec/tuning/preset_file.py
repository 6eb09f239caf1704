"""Preset files: the settings `python -m paradec tune` chose for a machine and a task, one JSON file that
`run --preset FILE`, `bench --preset FILE` and the app (its operator's PARADEC_PRESET) load.

    {"kind": "paradec-preset", "schema": 1, "created": ..., "machine": {...}, "model": ..., "source": ...,
     "methods": {"eagle3": {"depth": 5, "top_k": 4, ...}, ...},        # the best settings, all categories
     "categories": {"coding": {"eagle3": {...}}, ...},                   # the best per category (optional)
     "evidence": {"eagle3": {"speedup": .., "default_speedup": .., "tau": ..}}}

Every value is checked against the method's description (paradec.catalog) when the file is read, so a preset
never reaches a run with a parameter the method lacks. Standard library only: the app reads it without torch."""
from __future__ import annotations

import json
from pathlib import Path

from .. import catalog
from ..traces.files import read_regular, write_atomic

KIND = "paradec-preset"
SCHEMA = 1
MAX_BYTES = 2**20


class PresetError(ValueError):
    """A file that is not a usable preset; the message is one line for the user."""


def load(path: str | Path) -> dict:
    """A preset file, every method's settings checked. PresetError when it is not one."""
    try:
        data = json.loads(read_regular(path, MAX_BYTES + 1))
    except OSError as e:
        raise PresetError(f"cannot read preset {path}: {e.strerror or e}") from None
    except (ValueError, RecursionError) as e:
        raise PresetError(f"preset {path}: not JSON ({e})") from None
    if not isinstance(data, dict) or data.get("kind") != KIND or data.get("schema") != SCHEMA:
        raise PresetError(f"preset {path}: not a paradec preset file of schema {SCHEMA}")
    categories = data.get("categories") or {}
    if not isinstance(categories, dict):
        raise PresetError(f"preset {path}: 'categories' must map categories to methods' settings")
    groups = [data.get("methods"), *categories.values()]
    for group in groups:
        if not isinstance(group, dict):
            raise PresetError(f"preset {path}: 'methods' and each category must map methods to settings")
        for method, values in group.items():
            _check(path, method, values)
    return data


def _check(path, method: str, values) -> None:
    try:
        if not isinstance(values, dict):
            raise ValueError("its settings must be an object")
        catalog.parse(catalog.method(method), values)
    except ValueError as e:
        raise PresetError(f"preset {path}: {method}: {e}") from None


def settings(preset: dict | None, method: str, category: str = "") -> dict:
    """The preset's settings for a method (a category's own where it has them); {} for none."""
    if not preset:
        return {}
    own = (preset.get("categories") or {}).get(category, {}).get(method) if category else None
    return dict(own if own is not None else preset["methods"].get(method, {}))


def pairs(preset: dict | None, method: str) -> list[str]:
    """The settings as --set KEY=VALUE strings (what a run's own --set then overrides)."""
    return [f"{k}={_text(v)}" for k, v in settings(preset, method).items()]


def apply(names: dict[str, tuple[str, list[str]]], preset: dict | None) -> dict:
    """bench's rows (label -> (method, KEY=VALUE pairs)) with the preset's settings under each row's own."""
    return {label: (m, pairs(preset, m) + own) for label, (m, own) in names.items()}


def _text(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def save(path: str | Path, data: dict) -> None:
    """Write a preset atomically. OSError when unwritable."""
    write_atomic(path, json.dumps({"kind": KIND, "schema": SCHEMA, **data}, ensure_ascii=False, indent=1))
