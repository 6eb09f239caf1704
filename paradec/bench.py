"""python -m paradec bench: every method against AR on the same prompts, in one process.

Machines are noisy, so only ratios measured within one run are reported: speedup =
method tokens/s / AR tokens/s over the same prompts (equal to the wall-time ratio when,
as in greedy decoding, every method produces the same tokens)."""
from __future__ import annotations

import json
import platform
import sys
import time
from collections import defaultdict

from . import methods
from .cli import draft_spec, load_models
from .data import SPLITS, first_turn, read_jsonl, split_of
from .trace import Trace

PEERS = ("hf_generate", "hf_prompt_lookup", "hf_assisted")


def load_prompts(path: str, limit: int = 0, categories: str = "", split: str = "all", per_category: int = 0) -> list[dict]:
    """Prompt rows: {'id', 'category', 'prompt'}; Spec-Bench rows use their first turn."""
    keep = {c for c in categories.split(",") if c}
    if split not in SPLITS:
        raise methods.InputError(f"unknown split {split!r} (choose from {', '.join(SPLITS)})")
    try:
        data = read_jsonl(path)
    except (OSError, UnicodeDecodeError) as e:
        raise methods.InputError(f"cannot read prompts {path}: {getattr(e, 'strerror', None) or e}") from None
    except json.JSONDecodeError as e:
        raise methods.InputError(f"{path}: not JSONL ({e})") from None
    rows = []
    for n, d in enumerate(data, 1):
        prompt = first_turn(d) if isinstance(d, dict) else None
        if prompt is None:
            raise methods.InputError(f"{path}: row {n} has no 'prompt' or 'turns'")
        row = {"id": d.get("id", d.get("question_id", n)), "category": d.get("category", "all"), "prompt": prompt}
        if (not keep or row["category"] in keep) and split in ("all", split_of(d)):
            rows.append(row)
    rows = _first_per_category(rows, per_category) if per_category > 0 else rows
    rows = rows[:limit] if limit > 0 else rows
    if not rows:
        raise methods.InputError(f"{path}: no prompts to run")
    return rows


def _first_per_category(rows: list[dict], n: int) -> list[dict]:
    """The first n rows of each category, in file order."""
    kept, seen = [], defaultdict(int)
    for r in rows:
        seen[r["category"]] += 1
        if seen[r["category"]] <= n:
            kept.append(r)
    return kept


def bench_command(args) -> int:
    names = ["ar"] + [m for m in args.methods.split(",") if m and m != "ar"]
    for name in names:
        methods.check_method(name)
    rows = load_prompts(args.prompts, args.limit, args.categories, args.split, args.per_category)
    spec = draft_spec(args, any(methods.needs_draft_model(m) for m in names))
    peers = _peer_names(args, spec)
    target, draft = load_models(args, spec)
    report = bench(target, draft, names, peers, rows, args)
    print(json.dumps(report, ensure_ascii=False) if args.json else format_report(report))
    return 0


def _peer_names(args, draft: str | None) -> list[str]:
    if not args.peers:
        return []
    if args.peers != "hf":
        raise methods.InputError(f"unknown peers {args.peers!r} (only 'hf')")
    return [p for p in PEERS if p != "hf_assisted" or draft]


def bench(target, draft, names, peers, rows, args) -> dict:
    from .run import run

    settings = dict(max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_p=args.top_p,
                    top_k=args.top_k, seed=args.seed, chat=not args.no_chat)
    run(target, "ar", rows[0]["prompt"], **settings)  # warm-up: first-call costs are not a method's
    runs = defaultdict(list)  # name -> [(row, record)]
    for n, row in enumerate(rows, 1):
        print(f"\rbench: prompt {n}/{len(rows)} ({row['category']})", end="", file=sys.stderr, flush=True)
        for _ in range(max(1, args.repeats)):
            for name in names:
                d = draft if methods.needs_draft_model(name) else None
                t = run(target, name, row["prompt"], draft=d, **settings)
                runs[name].append((row, _record(t)))
            for name in peers:
                runs[name].append((row, _hf_peer(name, target, draft, row["prompt"], settings)))
    print(file=sys.stderr)
    return _aggregate(runs, rows, target, draft, args)


def _record(t: Trace) -> dict:
    return {"tokens": t.token_ids, "wall_s": t.wall_s, "forwards": t.target_forwards,
            "drafted": t.drafted, "accepted": t.accepted_drafts}


def _hf_peer(name: str, target, draft, prompt: str, settings: dict) -> dict:
    """Hugging Face generate on the same model and prompt; it reports no forward count, so no τ."""
    import torch

    from .models import encode_prompt

    ids = torch.tensor([encode_prompt(target.tokenizer, prompt, settings["chat"])], device=target.model.device)
    kw = dict(max_new_tokens=settings["max_new_tokens"], attention_mask=torch.ones_like(ids),
              pad_token_id=target.tokenizer.eos_token_id)
    if settings["temperature"] > 0:
        kw.update(do_sample=True, temperature=settings["temperature"], top_p=settings["top_p"], top_k=settings["top_k"])
    else:
        kw.update(do_sample=False, temperature=None, top_p=None, top_k=None)
    if name == "hf_prompt_lookup":
        kw["prompt_lookup_num_tokens"] = 10
    if name == "hf_assisted":
        # A subset draft is not a plain Hugging Face model: the assistant is its `full` twin,
        # the same trained layers with the target's full LM head (a costlier draft step).
        kw["assistant_model"] = getattr(draft.model, "full", draft.model)
    t0 = time.perf_counter()
    with torch.inference_mode():
        out = target.model.generate(ids, **kw)
    wall = time.perf_counter() - t0
    return {"tokens": out[0, ids.shape[1]:].tolist(), "wall_s": wall, "forwards": None, "drafted": 0, "accepted": 0}


def _aggregate(runs: dict, rows, target, draft, args) -> dict:
    cats = sorted({r["category"] for r in rows})
    report = {
        "machine": {"platform": platform.platform(), "python": sys.version.split()[0], "device": target.device,
                    "dtype": target.dtype},
        "model": target.name, "draft": draft.name if draft else None, "prompts": len(rows),
        "max_new_tokens": args.max_new_tokens, "temperature": args.temperature, "repeats": args.repeats,
        "methods": {n: _metrics(recs, runs["ar"]) for n, recs in runs.items()},
        "categories": {},
    }
    for c in cats:
        report["categories"][c] = {
            n: _metrics([x for x in recs if x[0]["category"] == c], [x for x in runs["ar"] if x[0]["category"] == c])
            for n, recs in runs.items()
        }
    return report


def _metrics(recs: list, ar: list) -> dict:
    tokens = sum(len(r["tokens"]) for _, r in recs)
    wall = sum(r["wall_s"] for _, r in recs)
    ar_tps = sum(len(r["tokens"]) for _, r in ar) / max(1e-9, sum(r["wall_s"] for _, r in ar))
    tps = tokens / max(1e-9, wall)
    forwards = [r["forwards"] for _, r in recs]
    drafted = sum(r["drafted"] for _, r in recs)
    return {
        "speedup": round(tps / ar_tps, 3),
        "tau": round(tokens / sum(forwards), 3) if None not in forwards else None,
        "acceptance_rate": round(sum(r["accepted"] for _, r in recs) / drafted, 3) if drafted else 0.0,
        "tokens_per_s": round(tps, 2),
        "identical_runs": sum(r["tokens"] == a["tokens"] for (_, r), (_, a) in zip(recs, ar)),
        "runs": len(recs),
    }


def format_report(report: dict) -> str:
    lines = [f"model {report['model']}  draft {report['draft']}  prompts {report['prompts']}  "
             f"max_new_tokens {report['max_new_tokens']}  device {report['machine']['device']}",
             f"{'method':<18}{'speedup':>9}{'tau':>7}{'accept':>8}{'tok/s':>8}{'identical':>11}"]
    for name, m in report["methods"].items():
        tau = f"{m['tau']:.2f}" if m["tau"] is not None else "-"
        lines.append(f"{name:<18}{m['speedup']:>8.2f}x{tau:>7}{m['acceptance_rate']:>8.2f}"
                     f"{m['tokens_per_s']:>8.1f}{m['identical_runs']:>6}/{m['runs']}")
    return "\n".join(lines)
