"""The Roofline page's predict questions, from the measured forward-cost curve (assets/traces/forward_cost.json):
will a verify pass over k tokens cost closer to one one-token pass, or to k of them?"""
from __future__ import annotations

import json
from pathlib import Path

from ..costs.measured import ratio as cost_ratio
from . import N_, say

COST = "traces/forward_cost.json"
ROWS = (8, 32)  # the pass widths asked about: a CPU-sized tree, and a GPU-sized one


def curve(root: Path) -> dict[int, float]:
    """tokens in the pass -> paradec's measured median ms (empty when the file is not shipped)."""
    path = Path(root) / COST
    if not path.is_file():
        return {}
    d = json.loads(path.read_text())
    return dict(zip(d["tokens"], d["curves"]["paradec"]["median_ms"]))


def questions(root: Path) -> list[dict]:
    """One question per width of ROWS the curve measured (none without the file)."""
    ms, out = curve(root), []
    for k in (k for k in ROWS if k in ms and 1 in ms):
        ratio = cost_ratio(ms, k)
        near_one = ratio - 1 < k - ratio
        why = say(N_("Measured on this machine: a pass over {k} tokens takes {ms_k:.1f} ms, a one-token pass "
                     "{ms_1:.1f} ms: {ratio:.2f}x. A pass reads every weight once however many tokens it carries, so "
                     "while it waits on memory the extra tokens ride almost free."), k=k, ms_k=ms[k], ms_1=ms[1],
                  ratio=ratio)
        out.append({"kind": "cost", "text": say(N_("Predict: on this machine, will a verify pass over {k} tokens cost "
                                                   "closer to 1x or to {k}x a one-token pass?"), k=k),
                    "choices": [say(N_("closer to 1x")), say(N_("closer to {k}x"), k=k)],
                    "answer": 0 if near_one else 1, "why": why, "pick": None, "node": None,
                    "terms": ["roofline analysis", "memory bandwidth", "forward pass"]})
    return out
