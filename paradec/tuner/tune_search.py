"""The tuner's search, with no torch: a method's search space (from paradec.catalog's `tune` values), seeded
candidate settings, successive halving's schedule, and the Pareto front of speed-up against τ.

Successive halving (Jamieson and Talwalkar, 2016) spends a budget of runs where it matters: every candidate
decodes a few prompts, the better half decodes twice as many, and so on, so a hopeless setting costs two
prompts and the finalists are measured on many."""
from __future__ import annotations

import itertools
import json
import math
import random

from .. import catalog
from ..traces.files import read_regular

KIND = "paradec-tune"
SCHEMA = 1
MAX_BYTES = 64 * 2**20
DEFAULTS = "defaults"  # the candidate that sets nothing: the method's defaults as the device profile sizes them
# What a resumed tune reads of its state file, as shapes for misfit(): a file edited by hand or cut short
# fails when it is loaded, in one line, not as a KeyError an hour into the run.
NUMBER = (int, float)
RECORD = {"tokens": int, "wall_s": NUMBER, "forwards": int, "ids": str}
FINAL = {"best": str, "best_params": dict, "speedup": NUMBER, "tau": NUMBER, "default_speedup": NUMBER,
         "default_tau": NUMBER, "prompts": int, "by_category": {str: {"key": str, "params": dict, "speedup": NUMBER}}}
METHOD = {"runs": {str: {str: RECORD}}, "effective": {str: dict}, "final?": FINAL}
STATE = {"fingerprint": str, "settings": {"model": (str, type(None))}, "created": str, "machine": dict,
         "ar": {str: RECORD}, "methods": {str: METHOD}}
_ABSENT = object()  # a missing field: it fits no shape


def space(method: str) -> dict[str, tuple]:
    """Each tuned parameter and the values tried (empty for a method with nothing to tune)."""
    return {p.name: p.tune for p in catalog.method(method).params if p.tune}


def tunable() -> list[str]:
    return [m for m in catalog.METHODS if space(m)]


def normal(method: str, values: dict) -> dict:
    """Settings with every parameter that does not matter under the others (a threshold a fixed rule
    ignores) left out: two settings that decode alike are one candidate."""
    desc = catalog.method(method)
    return {k: v for k, v in values.items()
            if not desc.param(k).when or values.get(desc.param(k).when[0]) in desc.param(k).when[1]}


def key(values: dict) -> str:
    """A candidate's name: its settings as KEY=VALUE, sorted (DEFAULTS for none)."""
    return ";".join(f"{k}={v}" for k, v in sorted(values.items())) or DEFAULTS


def candidates(method: str, n: int, seed: int = 0) -> dict[str, dict]:
    """DEFAULTS, then up to n distinct settings drawn from the space (seeded); the whole space when smaller."""
    grid = space(method)
    every = {key(normal(method, dict(zip(grid, combo)))): normal(method, dict(zip(grid, combo)))
             for combo in itertools.product(*grid.values())}
    picked = sorted(every) if len(every) <= n else random.Random(seed).sample(sorted(every), n)
    return {DEFAULTS: {}, **{k: every[k] for k in picked if k != DEFAULTS}}


def schedule(n_candidates: int, n_prompts: int, first: int = 2, eta: int = 2) -> list[tuple[int, int]]:
    """[(candidates kept, prompts each decodes)] per rung: prompts grow eta-fold, candidates shrink eta-fold,
    until one candidate is left or every prompt is used."""
    rungs, kept, prompts = [], n_candidates, min(first, n_prompts)
    while True:
        rungs.append((kept, prompts))
        if kept <= 1 or prompts >= n_prompts:
            return rungs
        kept, prompts = max(1, math.ceil(kept / eta)), min(n_prompts, prompts * eta)


def pareto(points: dict[str, dict]) -> list[str]:
    """The candidates no other beats on both speed-up and τ, by speed-up (highest first)."""
    def beaten(a: dict) -> bool:
        return any(b["speedup"] >= a["speedup"] and b["tau"] >= a["tau"] and
                   (b["speedup"], b["tau"]) != (a["speedup"], a["tau"]) for b in points.values())

    return sorted((k for k, p in points.items() if not beaten(p)), key=lambda k: -points[k]["speedup"])


def score(recs: list[dict], ar: list[dict]) -> dict:
    """Speed-up (tokens/s over AR's on the same prompts), τ and runs identical to AR's, from stored records."""
    tokens, wall = sum(r["tokens"] for r in recs), sum(r["wall_s"] for r in recs)
    ar_tokens, ar_wall = sum(r["tokens"] for r in ar), sum(r["wall_s"] for r in ar)
    speed = (tokens / wall) / (ar_tokens / ar_wall) if wall > 0 and ar_wall > 0 and ar_tokens else 0.0
    return {"speedup": round(speed, 3), "tau": round(tokens / max(1, sum(r["forwards"] for r in recs)), 3),
            "identical": sum(r["ids"] == a["ids"] for r, a in zip(recs, ar)), "runs": len(recs)}


def fingerprint(settings: dict) -> str:
    """What a resumed run must share with the state file it continues (the run's settings, as JSON)."""
    return json.dumps(settings, sort_keys=True)


def load(path) -> dict:
    """A tune state / results file (the Tune page reads it too); ValueError (one line) when it is not one."""
    try:
        data = json.loads(read_regular(path, MAX_BYTES + 1))
    except (OSError, ValueError, RecursionError) as e:
        raise ValueError(f"cannot read tune results {path}: {getattr(e, 'strerror', None) or e}") from None
    if not isinstance(data, dict) or data.get("kind") != KIND or data.get("schema") != SCHEMA:
        raise ValueError(f"{path}: not a paradec tune results file of schema {SCHEMA}")
    return data


def misfit(value, shape, where: str = "") -> str | None:
    """Where value first departs from shape (None when it fits): a type or a tuple of types (JSON true is no
    number); {str: S}, an object whose every value fits S; {"name": S, "other?": S}, an object with those
    fields (? optional) and perhaps others."""
    if not isinstance(shape, dict):
        return where or "the file" if type(value) is bool or not isinstance(value, shape) else None
    if not isinstance(value, dict):
        return where or "the file"
    if str in shape:
        fields = [(k, v, shape[str]) for k, v in value.items()]
    else:
        fields = [(k.rstrip("?"), value.get(k.rstrip("?"), _ABSENT), s) for k, s in shape.items()
                  if not k.endswith("?") or k.rstrip("?") in value]
    return next((bad for k, v, s in fields if (bad := misfit(v, s, f"{where}.{k}" if where else k))), None)
