"""Hostile traces for the loader and the pages: recorded traces with one thing made
wrong (BROKEN: the loader must refuse each with a TraceError) or made odd but legal (ODD: the
loader takes them and the page must draw them or show an error box). Built from the recorded
traces, so each one is a real trace but for the one change."""
from __future__ import annotations

import copy
import json
from pathlib import Path

TRACES = Path(__file__).resolve().parents[1] / "assets" / "traces"


def recorded(name: str) -> dict:
    return json.loads((TRACES / f"{name}.json").read_text())


def _tested(d: dict) -> tuple[dict, dict]:
    """The first step with a tested node, and that node."""
    for s in d["steps"]:
        for n in s["nodes"]:
            if n["status"] != "unreached":
                return s, n
    raise AssertionError("no tested node")


def _first(d: dict, pred) -> dict:
    return next(s for s in d["steps"] if pred(s))


def _accepting(d: dict) -> dict:
    return _first(d, lambda s: s["accepted"])


def _bet(d: dict) -> dict:
    """The record of mirror's first step with a bet on the worker."""
    return _first(d, lambda s: s["record"]["hit"] is not None)["record"]


def _extras(record: dict) -> dict:
    """An EAGLE record as schema 1 wrote it: candidates as [token, parent, depth, score, rank, expanded, kept]."""
    drafted = record["drafted"] and [list(c.values()) for c in record["drafted"]]
    return {k: v for k, v in dict(record, drafted=drafted).items() if v is not None}


def _set(path: str, value):
    """A mutation that sets d[path...] (dotted; a number indexes a list; 'tested'/'accepting' pick a step)."""
    def mutate(d):
        keys = path.split(".")
        if len(keys) == 1:
            d[path] = value
            return
        node = {"tested": lambda: _tested(d)[1], "tstep": lambda: _tested(d)[0], "accepting": lambda: _accepting(d),
                "nodes": lambda: _first(d, lambda s: len(s["nodes"]) > 1)}.get(keys[0], lambda: d[keys[0]])()
        for k in keys[1:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        last = keys[-1]
        if value is DELETE:
            del node[last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return mutate


DELETE = object()


def _chain(n: int):
    """One step drafting an n-node chain (the 230 KB trace that took a page 54 s)."""
    def mutate(d):
        s = d["steps"][0]
        s["nodes"] = [{"token": 5, "parent": j - 1, "depth": j + 1, "status": "unreached"} for j in range(n)]
        s["accepted"], s["tokens"], s["origins"] = [], s["tokens"][-1:], s["origins"][-1:]
    return mutate


def _many_steps(n: int):
    def mutate(d):
        d["steps"] = [dict(copy.deepcopy(d["steps"][-1]), index=i) for i in range(n)]
    return mutate


def _wide_window(cells: int):
    def mutate(d):
        s = d["steps"][1]
        s["record"]["levels"] = [[1] * (cells + 1)]
        s["record"]["window_pos"], s["record"]["window_sees"] = [1] * cells, [[0]] * cells
    return mutate


def _more_accepted_origins(d):
    s = _accepting(d)
    s["origins"] = ["accepted"] * (len(s["accepted"]) + 1)
    s["tokens"] = s["tokens"][: len(s["accepted"])] + s["tokens"][-1:]


BROKEN = {  # name -> (recorded trace, mutation)
    "status outside the three": ("sps-sampled", _set("tested.status", "maybe")),
    "status missing value": ("sps-greedy", _set("tested.status", "")),
    "empty prompt_ids": ("sps-greedy", _set("prompt_ids", [])),
    "negative prompt id": ("ar-greedy", _set("prompt_ids.0", -3)),
    "more accepted origins than accepted nodes": ("pld-greedy", _more_accepted_origins),
    "null p on a tested node": ("sps-sampled", _set("tested.p", None)),
    "null q on a tested node": ("sps-sampled", _set("tested.q", None)),
    "p above 1": ("sps-sampled", _set("tested.p", 1.5)),
    "negative u": ("sps-sampled", _set("tested.u", -0.1)),
    "u without accept_prob": ("sps-sampled", _set("tested.accept_prob", None)),
    "string temperature": ("sps-sampled", _set("sampling.temperature", "hot")),
    "string top_p": ("sps-sampled", _set("sampling.top_p", "0.9")),
    "float seed": ("sps-sampled", _set("sampling.seed", 1.5)),
    "negative temperature": ("sps-sampled", _set("sampling.temperature", -1.0)),
    "string parameter k": ("sps-greedy", _set("params.k", "4")),
    "string parameter candidates": ("lookahead-greedy", _set("params.candidates", "3")),
    "token_text value a number": ("ar-greedy", _set("token_text.13", 13)),
    "token_text value null": ("ar-greedy", _set("token_text.13", None)),
    "token_text lone surrogate": ("ar-greedy", _set("token_text.13", "\ud800")),
    "token_text key not an id": ("ar-greedy", _set("token_text.abc", "x")),
    "prompt lone surrogate": ("ar-greedy", _set("prompt", "hi \udcff")),
    "parent after its child": ("sps-greedy", _set("nodes.nodes.0.parent", 1)),
    "parent out of range": ("sps-greedy", _set("nodes.nodes.0.parent", 99)),
    "parent below -1": ("sps-greedy", _set("nodes.nodes.0.parent", -2)),
    "depth that does not follow the parent": ("sps-greedy", _set("nodes.nodes.1.depth", 7)),
    "negative token": ("sps-greedy", _set("nodes.nodes.0.token", -1)),
    "accepted index out of range": ("pld-greedy", _set("accepting.accepted.0", 400)),
    "accepted path not a path": ("eagle2-greedy", lambda d: _accepting(d).update(accepted=[0, 0])),
    "accepted node not marked accepted": ("pld-greedy", lambda d: _accepting(d)["nodes"][0].update(status="rejected")),
    "no committed token": ("ar-greedy", lambda d: d["steps"][0].update(tokens=[], origins=[])),
    "tokens and origins differ in length": ("ar-greedy", _set("steps.0.origins", ["target", "bonus"])),
    "unknown origin": ("ar-greedy", _set("steps.0.origins.0", "magic")),
    "committed token not the node's": ("pld-greedy", lambda d: _accepting(d)["tokens"].__setitem__(0, 99999)),
    "p_top not pairs": ("sps-sampled", _set("tested.p_top", [1, 2, 3])),
    "q_top probability above 1": ("sps-sampled", _set("tested.q_top", [[1, 7.0]])),
    "last_p_top not pairs": ("ar-greedy", _set("steps.0.last_p_top", [[1]])),
    "residual_top strings": ("sps-sampled", _set("steps.0.residual_top", [["a", 0.5]])),
    "negative draft_ms": ("sps-greedy", _set("steps.0.draft_ms", -5.0)),
    "negative context_len": ("sps-greedy", _set("steps.0.context_len", -1)),
    "jacobi block missing": ("jacobi-greedy", _set("steps.1.record.block", DELETE)),
    "jacobi block of strings": ("jacobi-greedy", _set("steps.1.record.block", ["a", "b"])),
    "jacobi block empty": ("jacobi-greedy", _set("steps.1.record.block", [])),
    "jacobi changed shorter than block": ("jacobi-greedy", _set("steps.1.record.changed", [True])),
    "jacobi changed a dict": ("jacobi-greedy", _set("steps.1.record.changed", {"a": 1})),
    "cllm block not a list": ("cllm-greedy", _set("steps.1.record.block", 5)),
    "lookahead levels missing": ("lookahead-greedy", _set("steps.1.record.levels", DELETE)),
    "lookahead levels empty": ("lookahead-greedy", _set("steps.1.record.levels", [])),
    "lookahead first level empty": ("lookahead-greedy", _set("steps.1.record.levels.0", [])),
    "lookahead window row out of range": ("lookahead-greedy", _set("steps.1.record.window_sees.0", [0, 9999])),
    "lookahead window_pos short": ("lookahead-greedy", _set("steps.1.record.window_pos", [1])),
    "lookahead added gram of one": ("lookahead-greedy", _set("steps.1.record.added", [[5]])),
    "lookahead candidates of strings": ("lookahead-greedy", _set("steps.1.record.candidates", [["x"]])),
    "medusa rank shorter than nodes": ("medusa-greedy", _set("nodes.record.rank", [0])),
    "medusa rank missing": ("medusa-greedy", _set("nodes.record.rank", DELETE)),
    "medusa head_top flat": ("medusa-greedy", _set("nodes.record.head_top", [1, 2])),
    "medusa head_p strings": ("medusa-greedy", _set("nodes.record.head_p", ["x"])),
    "eagle drafted short entries": ("eagle2-greedy", _set("nodes.record.drafted.0", {"token": 1, "parent": -1})),
    "eagle drafted parent ahead": ("eagle2-greedy", _set("nodes.record.drafted.0.parent", 5)),
    "eagle drafted score overflows exp": ("eagle2-greedy", _set("nodes.record.drafted.0.score", 1000.0)),
    "eagle drafted kept a number": ("eagle2-greedy", _set("nodes.record.drafted.0.kept", 1)),
    "eagle drafted kept count wrong": ("eagle-greedy", _set("nodes.record.drafted", [])),
    "eagle3 drafted a string": ("eagle3-greedy", _set("nodes.record.drafted", "all")),
    "mirror hit without wait_ms": ("mirror-greedy", lambda d: _bet(d).pop("wait_ms")),
    "mirror prefetch of three": ("mirror-greedy", lambda d: _bet(d).update(prefetch=[1, 2, 3])),
    "mirror wait_ms a string": ("mirror-greedy", lambda d: _bet(d).update(wait_ms="5")),
    "mirror hit a number": ("mirror-greedy", lambda d: _bet(d).update(hit=1)),
    "draft_length a string": ("sps-heuristic", _set("steps.1.record.draft_length", "4")),
    "chance of strings": ("sps-learned", _set("steps.1.record.chance", ["x"])),
    "a 1,500-node chain": ("sps-greedy", _chain(1500)),
    "more steps than a page replays": ("ar-greedy", _many_steps(2049)),
    "a window of 300 cells": ("lookahead-greedy", _wide_window(300)),
    "a record list of 5,000": ("sps-confidence", _set("steps.1.record.chance", [0.5] * 5000)),
    "unknown record field": ("pld-greedy", _set("steps.0.record.zzz", {"a": [1, 2]})),
    "record missing a field": ("sps-greedy", _set("steps.0.record.k", DELETE)),
    "a record on an ar step": ("ar-greedy", _set("steps.0.record", {"k": 1})),
    "schema 1 extras of another shape": ("sps-greedy", lambda d: d.update(schema=1, steps=[
        dict({k: v for k, v in s.items() if k != "record"}, extras={"zzz": 1}) for s in d["steps"]])),
}

ODD = {  # name -> (recorded trace, mutation): legal, so the page must draw it
    "typical acceptance: tested nodes without q or u": ("sps-sampled", lambda d: [
        n.update(accept_prob=None, u=None, q=None) for s in d["steps"] for n in s["nodes"]]),
    "negative seed": ("sps-sampled", _set("sampling.seed", -(2**62))),
    "greedy tested nodes without p or q": ("sps-greedy", lambda d: [
        n.update(p=None, q=None) for s in d["steps"] for n in s["nodes"]]),
    "medusa with no head_top": ("medusa-greedy", lambda d: [s["record"].update(head_top=[]) for s in d["steps"]]),
    "eagle without drafted": ("eagle2-greedy", lambda d: [s["record"].update(drafted=None) for s in d["steps"]]),
    "a 256-node chain": ("sps-greedy", _chain(256)),
    "2,048 steps": ("ar-greedy", _many_steps(2048)),
    "a window of 256 cells": ("lookahead-greedy", _wide_window(256)),
    "a schema-1 trace": ("eagle2-greedy", lambda d: d.update(schema=1, steps=[
        dict({k: v for k, v in s.items() if k != "record"}, extras=_extras(s["record"])) for s in d["steps"]])),
}


def build(table: dict, name: str) -> tuple[str, bytes]:
    """(the page's method, the trace file's bytes)."""
    source, mutate = table[name]
    d = recorded(source)
    mutate(d)
    return d["method"], json.dumps(d).encode()  # ASCII: a lone surrogate travels as its \\u escape
