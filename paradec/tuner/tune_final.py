"""The tuner's last stage: a method's finalists and its defaults on the held-out prompts, interleaved with AR
prompt by prompt in one process (kept only whole), and the fastest overall and per category."""
from __future__ import annotations

import hashlib
import json
import sys

from ..traces.files import printable
from . import tune_search as search


def record(trace) -> dict:
    """What the tuner keeps of a run: enough for speed-up, τ and whether its tokens are AR's."""
    return {"tokens": len(trace.token_ids), "wall_s": trace.wall_s, "forwards": trace.target_forwards,
            "ids": hashlib.sha1(json.dumps(trace.token_ids).encode()).hexdigest()[:12]}


def final(tuner, method: str, mine: dict, held: list[dict]) -> dict:
    reached = {k: n for n, rung in enumerate(mine["rungs"]) for k in rung["scores"]}  # the last rung each reached
    points = mine["points"]
    ranked = sorted((k for k in points if k != search.DEFAULTS), key=lambda k: (-reached[k], -points[k]["speedup"]))
    keys = [search.DEFAULTS, *ranked[: tuner.args.finalists]]
    runs, ar, first = {k: [] for k in keys}, [], {}
    for i, row in enumerate(held * tuner.args.repeats, 1):
        category = printable(row["category"])
        print(f"\rtune {method}: held-out, prompt {i}/{len(held) * tuner.args.repeats} ({category})   ",
              end="", file=sys.stderr, flush=True)
        ar.append((row, tuner.ar(row, fresh=True)))
        for k in keys:
            trace = tuner.decode(method, mine["candidates"][k], row)
            runs[k].append((row, record(trace)))
            first.setdefault(k, trace)
    print(file=sys.stderr)
    scores = {k: _score(runs[k], ar) for k in keys}
    best = max(keys, key=lambda k: (scores[k]["speedup"], k == search.DEFAULTS))
    return {"finalists": keys, "scores": scores, "best": best, "best_params": mine["effective"][best],
            "speedup": scores[best]["speedup"], "tau": scores[best]["tau"], "prompts": len(ar),
            "default_speedup": scores[search.DEFAULTS]["speedup"], "default_tau": scores[search.DEFAULTS]["tau"],
            "default_params": mine["effective"][search.DEFAULTS], "by_category": _by_category(mine, runs, ar),
            "trace": first[best].to_dict()}


def _score(recs: list, ar: list, category: str | None = None) -> dict:
    pick = [i for i, (row, _) in enumerate(ar) if category in (None, row["category"])]
    return search.score([recs[i][1] for i in pick], [ar[i][1] for i in pick])


def _by_category(mine: dict, runs: dict, ar: list) -> dict:
    """Per category: the fastest finalist there, its settings, and the defaults' speed-up beside it."""
    out = {}
    for cat in sorted({row["category"] for row, _ in ar}):
        scores = {k: _score(recs, ar, cat) for k, recs in runs.items()}
        best = max(scores, key=lambda k: (scores[k]["speedup"], k == search.DEFAULTS))
        out[cat] = {"key": best, "params": mine["effective"][best], "speedup": scores[best]["speedup"],
                    "tau": scores[best]["tau"], "default_speedup": scores[search.DEFAULTS]["speedup"],
                    "scores": scores}
    return out
