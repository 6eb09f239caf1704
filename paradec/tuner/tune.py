"""python -m paradec tune: each method's settings searched for this machine and a task, in one process.

For each method: candidate settings (paradec.tuner.tune_search: its defaults, as the device profile sizes them, and
settings drawn from the catalog's `tune` values) decode the search prompts (the prompt file's training split)
under successive halving, AR beside them on every prompt; then the finalists and the defaults decode the
held-out prompts, interleaved with AR prompt by prompt, and the fastest there is the method's preset, the
fastest per category its category presets. Speed-ups are ratios to AR within this process.

Resumable: every decoded (setting, prompt) is written to the state file at once (atomically), and a rerun with
the same settings skips what it holds; the held-out comparison is kept only whole, so its ratios come from one
process. Progress goes to stderr."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from .. import methods
from ..traces import files
from ..tuning import preset_file
from . import tune_search as search
from .tune_final import final, record

KIND, SCHEMA = search.KIND, search.SCHEMA


def add_parser(sub, sampling_args, integer) -> None:
    """integer(most): the CLI's argparse type for a capped count."""
    t = sub.add_parser("tune", help="search each method's settings for this machine and a task; write a preset")
    t.add_argument("--methods", default="eagle3,lookahead", help="comma-separated, or 'all' (every tunable method)")
    t.add_argument("--prompts", default=None, help="JSONL prompt file (default: the shipped Spec-Bench)")
    t.add_argument("--categories", default="", help="comma-separated categories to keep (the task)")
    count = integer(1000)  # caps: a typo's 10**12 would run until the machine is switched off
    t.add_argument("--per-category", type=count, default=2, help="search prompts per category (training split)")
    t.add_argument("--heldout-per-category", type=count, default=2, help="held-out prompts per category")
    t.add_argument("--configs", type=count, default=24, help="candidate settings per method, besides the defaults")
    t.add_argument("--first", type=count, default=2, help="prompts each candidate decodes in the first rung")
    t.add_argument("--eta", type=count, default=2, help="each rung keeps 1/eta of the candidates on eta x the prompts")
    t.add_argument("--finalists", type=count, default=3,
                   help="candidates compared with the defaults on held-out prompts")
    t.add_argument("--repeats", type=count, default=1, help="held-out comparison: decode every prompt N times")
    t.add_argument("--search-seed", type=integer(), default=0, help="which candidates are drawn")
    t.add_argument("--threads", type=integer(), default=0, help="torch threads (0 = torch's default)")
    t.add_argument("--state", required=True, help="the state and results file (JSON); a rerun resumes from it")
    t.add_argument("--preset-out", help="write the chosen settings here as a preset file (run/bench --preset)")
    sampling_args(t)


def tune_command(args) -> int:
    from .. import models, outputs
    from ..bench import check_prompts, load_prompts
    from ..data import SPECBENCH
    from ..runner import Runner

    names = tunable_names(args.methods)
    read = [("--prompts", args.prompts or str(SPECBENCH)), ("--preset", args.preset)]
    writes = outputs.check([("state", args.state)] + ([("preset", args.preset_out)] if args.preset_out else []),
                           read + outputs.inputs(args, [(m, []) for m in names]), args.force)  # before any run
    if min(args.configs, args.first, args.eta - 1, args.finalists, args.repeats, args.per_category) < 1:
        raise methods.InputError("--configs, --first, --finalists, --repeats, --per-category must be at least 1, "
                                 "--eta at least 2")
    path = args.prompts or str(SPECBENCH)
    rows = load_prompts(path, categories=args.categories, split="train", per_category=args.per_category)
    held = _heldout(path, args)
    state = _state(args, path, names, rows, held)
    _threads(args.threads)
    spec = models.draft_for(args.draft, args.model, any(methods.needs_draft_model(m) for m in names))
    preset = preset_file.load(args.preset) if args.preset else None
    outputs.announce("tune", writes)
    runner = Runner(args.device, args.dtype, weights=args.weights)
    target = runner.target(args.model)  # loaded before the first run: loading is no method's time
    check_prompts(target, rows + held, args.max_new_tokens, not args.no_chat)  # not one bad row minutes in
    Tuner(runner, spec, state, args, preset).all(names, rows, held)
    if args.preset_out:
        preset_file.save(args.preset_out, preset_of(state, args.state))
        print(f"tune: wrote {args.preset_out}", file=sys.stderr)
    files.print_out(json.dumps(summary(state)) if args.json else "\n".join(report_lines(state)))
    return 0


def tunable_names(spec: str) -> list[str]:
    names = search.tunable() if spec.strip() == "all" else [m.strip() for m in spec.split(",") if m.strip()]
    if not names:
        raise methods.InputError("--methods names no method (e.g. --methods eagle3,lookahead, or all)")
    for m in names:
        methods.describe(m)
        if not search.space(m):
            raise methods.InputError(f"{m} has no settings to tune (tunable: {', '.join(search.tunable())})")
    return names


def _heldout(path: str, args) -> list[dict]:
    """The held-out prompts; a file without a held-out split compares on its search prompts (said so)."""
    from ..bench import load_prompts

    try:
        return load_prompts(path, categories=args.categories, split="heldout", per_category=args.heldout_per_category)
    except methods.InputError:
        print("tune: the prompt file has no held-out prompts: the final comparison reuses the search prompts",
              file=sys.stderr)
        return load_prompts(path, categories=args.categories, split="train", per_category=args.heldout_per_category)


def _threads(n: int) -> None:
    import torch

    if not 0 <= n <= (os.cpu_count() or 1):
        raise methods.InputError(f"--threads must be between 0 (default) and this machine's {os.cpu_count()} cores")
    if n:
        torch.set_num_threads(n)


def _state(args, path: str, names: list[str], rows: list[dict], held: list[dict]) -> dict:
    """The state file's contents (a fresh one when absent); a file from other settings is refused."""
    from ..costs import machine

    settings = {k: getattr(args, k) for k in ("model", "draft", "device", "dtype", "max_new_tokens", "temperature",
                                               "top_p", "top_k", "seed", "no_chat", "configs", "first", "eta",
                                               "search_seed", "preset")}
    settings.update(prompts=path, search=[r["id"] for r in rows], heldout=[r["id"] for r in held])
    fresh = {"kind": KIND, "schema": SCHEMA, "fingerprint": search.fingerprint(settings), "settings": settings,
             "created": time.strftime("%Y-%m-%d %H:%M"), "machine": machine.describe(), "ar": {}, "methods": {}}
    if not Path(args.state).exists():
        return fresh  # tune_command checked that it can be written
    state = load(args.state)
    bad = search.misfit(state, search.STATE)
    if bad:
        raise methods.InputError(f"{args.state}: not a tune state this run can resume ({bad} is missing or "
                                 "of the wrong type)")
    if state["fingerprint"] != fresh["fingerprint"]:
        raise methods.InputError(f"{args.state} holds a tune run with other settings: resume with the same ones, "
                                 "or name another --state")
    print(f"tune: resuming {args.state}", file=sys.stderr)
    return state


def load(path: str | Path) -> dict:
    """A tune state / results file. InputError when it is not one."""
    try:
        return search.load(path)
    except ValueError as e:
        raise methods.InputError(str(e)) from None


class Tuner:
    """One process's tuning: the loaded models, the state it fills and saves after every run."""

    def __init__(self, runner, draft: str | None, state: dict, args, preset: dict | None):
        """runner: a paradec.runner.Runner with the target loaded; draft: the draft's spec (for sps)."""
        self.runner, self.draft, self.state, self.args, self.preset = runner, draft, state, args, preset
        self.settings = dict(max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_p=args.top_p,
                             top_k=args.top_k, seed=args.seed, chat=not args.no_chat)

    def all(self, names: list[str], rows: list[dict], held: list[dict]) -> None:
        self.decode("ar", {}, rows[0])  # warm-up: first-call costs are no one's
        for method in names:
            self.method(method, rows, held)

    def save(self) -> None:
        files.write_atomic(self.args.state, json.dumps(self.state, ensure_ascii=False))

    def decode(self, method: str, params: dict, row: dict):
        from ..runner import Request

        draft = self.draft if methods.needs_draft_model(method) else None
        return self.runner.decode(Request(method, row["prompt"], params, **self.settings, draft=draft,
                                          model=self.args.model))

    def ar(self, row: dict, fresh: bool = False) -> dict:
        """AR's record on a prompt: measured once for the search, anew for each held-out comparison."""
        name = f"search:{row['id']}"
        if fresh or name not in self.state["ar"]:
            rec = record(self.decode("ar", {}, row))
            if fresh:
                return rec
            self.state["ar"][name] = rec
        return self.state["ar"][name]

    def method(self, method: str, rows: list[dict], held: list[dict]) -> None:
        mine = self.state["methods"].setdefault(method, {"runs": {}, "effective": {}, "rungs": []})
        if "final" in mine:
            return
        base = preset_file.settings(self.preset, method)
        mine["candidates"] = {k: {**base, **v} for k, v in
                              search.candidates(method, self.args.configs, self.args.search_seed).items()}
        mine["rungs"] = self.halve(method, mine, rows)
        mine["points"] = {k: s for rung in mine["rungs"] for k, s in rung["scores"].items()}  # each at its last rung
        mine["front"] = search.pareto(mine["points"])
        mine["final"] = final(self, method, mine, held)
        self.save()

    def halve(self, method: str, mine: dict, rows: list[dict]) -> list[dict]:
        alive = list(mine["candidates"])
        rungs = []
        for n, (_, count) in enumerate(search.schedule(len(alive), len(rows), self.args.first, self.args.eta), 1):
            scores = {k: self.evaluate(method, mine, k, rows[:count], f"rung {n}") for k in alive}
            rungs.append({"prompts": count, "scores": scores})
            keep = max(1, len(alive) // self.args.eta) if count < len(rows) else len(alive)
            alive = sorted(alive, key=lambda k: -scores[k]["speedup"])[:keep]
        return rungs

    def evaluate(self, method: str, mine: dict, key: str, rows: list[dict], where: str) -> dict:
        runs = mine["runs"].setdefault(key, {})
        for i, row in enumerate(rows, 1):
            pid = str(row["id"])
            if pid in runs:
                continue
            self.ar(row)  # AR's record on this prompt, measured now when the search has none yet
            category = files.printable(row["category"])
            print(f"\rtune {method}: {where}, {key[:60]}, prompt {i}/{len(rows)} ({category})   ",
                  end="", file=sys.stderr, flush=True)
            trace = self.decode(method, mine["candidates"][key], row)
            runs[pid] = record(trace)
            mine["effective"].setdefault(key, {k: trace.params[k] for k in search.space(method)})
            self.save()
        return search.score([runs[str(r["id"])] for r in rows], [self.state["ar"][f"search:{r['id']}"] for r in rows])


def preset_of(state: dict, source: str) -> dict:
    """The preset file's contents: each method's fastest held-out settings, and per category."""
    done = {m: v["final"] for m, v in state["methods"].items() if "final" in v}
    cats = sorted({c for f in done.values() for c in f["by_category"]})
    return {"created": time.strftime("%Y-%m-%d %H:%M"), "machine": state["machine"],
            "model": state["settings"]["model"] or "embedded",
            "source": f"python -m paradec tune, state {Path(source).name} of {state['created']}",
            "methods": {m: f["best_params"] for m, f in done.items()},
            "categories": {c: {m: f["by_category"][c]["params"] for m, f in done.items() if c in f["by_category"]}
                           for c in cats},
            "evidence": {m: {k: f[k] for k in ("best", "speedup", "default_speedup", "tau", "default_tau", "prompts")}
                         for m, f in done.items()}}


def summary(state: dict) -> dict:
    return {m: {k: v for k, v in f["final"].items() if k != "trace"} for m, f in state["methods"].items()
            if "final" in f}


def report_lines(state: dict) -> list[str]:
    lines = [f"tuned on {state['machine'].get('cpu', '?')}, {state['created']}; speed-ups are tokens/s over AR's on "
             "the held-out prompts, in this process"]
    for m, f in summary(state).items():
        lines.append(f"{m}: best {f['best']} {f['speedup']:.2f}x (tau {f['tau']:.2f}) against the defaults' "
                     f"{f['default_speedup']:.2f}x (tau {f['default_tau']:.2f}) on {f['prompts']} prompts")
        lines += [f"  {c}: {b['key']} {b['speedup']:.2f}x" for c, b in f["by_category"].items()]
    return lines
