"""The benchmark: every method against AR on the same prompts, in one process, through the runner
(`python -m paradec bench` and the app's small benchmark both call bench()).

Machines are noisy, so only ratios measured within one run are reported: speedup =
method tokens/s / AR tokens/s over the same prompts (equal to the wall-time ratio when,
as in greedy decoding, every method produces the same tokens)."""
from __future__ import annotations

import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import torch

from . import bench_batch, bench_report, methods
from .core.targets import as_target
from .costs import machine
from .data import ASSETS, SPLITS, first_turn, read_jsonl, split_of
from .production import config as engine_config
from .production import workload
from .runner import Prepared, Request, Runner
from .traces.files import printable
from .tuning import presets

PEERS = ("hf_generate", "hf_prompt_lookup", "hf_assisted")
LOCAL_PEERS = ("hf", "llamacpp")  # --peers that run on this machine; the others are production engines' URLs
MAX_ID_CHARS = 200  # a prompt's id is echoed in progress lines, reports and tune's state


def load_prompts(path: str, limit: int = 0, categories: str = "", split: str = "all",
                 per_category: int = 0) -> list[dict]:
    """Prompt rows: {'id', 'category', 'prompt'}; Spec-Bench rows use their first turn."""
    keep = {c for c in categories.split(",") if c}
    if split not in SPLITS:
        raise methods.InputError(f"unknown split {split!r} (choose from {', '.join(SPLITS)})")
    try:
        data = read_jsonl(path)
    except (OSError, UnicodeDecodeError) as e:
        raise methods.InputError(f"cannot read prompts {path}: {getattr(e, 'strerror', None) or e}") from None
    except (ValueError, RecursionError) as e:  # not JSON, 100k nested brackets, an integer of 5,000 digits
        raise methods.InputError(f"{path}: not JSONL ({str(e) or type(e).__name__})") from None
    rows = []
    for n, d in enumerate(data, 1):
        row = _row(path, n, d)
        if (not keep or row["category"] in keep) and split in ("all", split_of(d)):
            rows.append(row)
    rows = _first_per_category(rows, per_category) if per_category > 0 else rows
    rows = rows[:limit] if limit > 0 else rows
    if not rows:
        raise methods.InputError(f"{path}: no prompts to run")
    return rows


def _row(path: str, n: int, d) -> dict:
    """The file's row n as {'id', 'category', 'prompt'}; InputError for a row of another shape."""
    prompt = first_turn(d) if isinstance(d, dict) else None
    if prompt is None:
        raise methods.InputError(f"{path}: row {n} has no 'prompt' or 'turns' (a list of strings)")
    row = {"id": d.get("id", d.get("question_id", n)), "category": d.get("category", "all"), "prompt": prompt}
    if not isinstance(row["category"], str):
        raise methods.InputError(f"{path}: row {n}: 'category' must be a string")
    if not isinstance(row["id"], (str, int)) or isinstance(row["id"], bool) or len(str(row["id"])) > MAX_ID_CHARS:
        raise methods.InputError(f"{path}: row {n}: 'id' must be a string or an integer of at most {MAX_ID_CHARS} "
                                 "characters")
    return row


def check_prompts(target, rows: list[dict], max_new_tokens: int, chat: bool) -> None:
    """Every prompt as a run would check it (its text, then its tokens against the model's context), before
    the first run: a benchmark or a tune otherwise stops on one bad row minutes in."""
    from .models import encode_prompt
    from .run import validate

    limit = getattr(target.model.config, "max_position_embeddings", None)
    for row in rows:
        try:
            validate(row["prompt"], max_new_tokens, 0.0, 1.0, 0)  # the sampling: each Request checks its own
            tokens = len(encode_prompt(target.tokenizer, row["prompt"], chat))
        except methods.InputError as e:
            raise methods.InputError(f"prompt {row['id']}: {e}") from None
        if limit and tokens + max_new_tokens > limit:
            raise methods.InputError(f"prompt {row['id']} ({tokens} tokens) plus {max_new_tokens} new tokens "
                                     f"exceeds the model's context of {limit}")


def _first_per_category(rows: list[dict], n: int) -> list[dict]:
    """The first n rows of each category, in file order."""
    kept, seen = [], defaultdict(int)
    for r in rows:
        seen[r["category"]] += 1
        if seen[r["category"]] <= n:
            kept.append(r)
    return kept


def variants(spec: str) -> dict[str, tuple[str, list[str]]]:
    """--methods "pld,sps[draft_length=learned;k=8]" -> label -> (method, its KEY=VALUE pairs),
    AR first: one method can run under several settings in the same run, each its own row."""
    out = {"ar": ("ar", [])}
    labels = [label.strip() for label in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", spec) if label.strip()]
    if not labels:  # AR against itself is no benchmark
        raise methods.InputError("--methods names no method (e.g. --methods pld,sps)")
    for label in labels:
        method, _, rest = label.partition("[")
        pairs = [p for p in rest.rstrip("]").split(";") if p.strip()]
        methods.parse_params(method.strip(), pairs)  # unknown method or parameter: fail before loading
        out.setdefault(label, (method.strip(), pairs))
    return out


@dataclass(frozen=True)
class Options:
    """How a benchmark runs: the sampling every method shares, the repeats, and where the prompts came
    from (the report says so). The command line and the app's small benchmark both build one."""
    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int = 0
    chat: bool = True
    repeats: int = 1
    prompts: str = ""  # the prompt file, or what the prompts are
    split: str = "all"
    categories: str = ""
    per_category: int = 0
    limit: int = 0
    preset: str | None = None  # the preset file the methods' settings came from, as the report names it
    memory: bool = False  # after the timed runs, one untimed, profiled run per method (paradec.bench_memory)
    batch: tuple[int, ...] = ()  # batch sizes: every method also decodes the prompts in batches (paradec.bench_batch)

    def sampling(self) -> dict:
        return dict(max_new_tokens=self.max_new_tokens, temperature=self.temperature, top_p=self.top_p,
                    top_k=self.top_k, seed=self.seed, chat=self.chat)


def engines(specs: list[str], names: dict) -> list[workload.Session]:
    """The production engines among --peers, each checked; the paradec method each one's method
    matches joins the run (its row and its first prompt's trace sit beside the engine's)."""
    sessions = []
    try:
        peers = engine_config.parse_all([spec for spec in specs if spec not in LOCAL_PEERS])
    except engine_config.EngineError as e:
        raise methods.InputError(f"--peers: {e}") from None
    for peer in peers:
        try:
            sessions.append(workload.Session(peer))
        except engine_config.EngineError as e:
            raise methods.InputError(f"--peers {peer.kind}: {e}") from None
        match = peer.matching
        if match and match not in {m for m, _ in names.values()}:  # eagle3[head=...] matches eagle3 too
            names[match] = (match, [])
    return sessions


def bench(runner: Runner, names: dict, rows: list[dict], options: Options, peers: list[str] = (),
          engines=(), model: str | None = None, draft: str | None = None, workers=()) -> dict:
    """Every method in `names` (name -> (method, its given params)) and every peer on every row, one
    after another in this process, timed alike. model, draft: the runner's target and draft specs. workers:
    peers in processes of their own (paradec.peers), run after the others on each row; the caller closes them."""
    target = runner.target(model)
    check_prompts(target, rows, options.max_new_tokens, options.chat)
    draft_model = runner.draft(draft, model) if draft else None
    torch_ar = runner.torch_products(model)  # AR on torch's products: the kernel's own baseline, a row of its own
    hf, hf_draft = _hf_models(runner, model, draft, draft_model, peers)
    for worker in workers:  # loaded and warmed up; a failure is the worker's line in the results, not the run's end
        worker.start(target, rows, options.sampling())

    def request(method: str, pairs, prompt: str) -> Request:
        d = draft if methods.needs_draft_model(method) else None
        return Request(method, prompt, pairs, **options.sampling(), draft=d, model=model)

    runner.decode(request("ar", [], rows[0]["prompt"]))  # warm-up: first-call costs are not a method's
    for method, pairs in names.values():  # cllm's fine-tuned copy, a draft: made once, before any timing
        runner.prepare(request(method, pairs, rows[0]["prompt"]))
    runs = defaultdict(list)  # name -> [(row, record)]
    elsewhere = defaultdict(list)  # the same, of the workers' rows (a worker that failed leaves none)
    first = {}  # method -> (its first row's label, its trace of the first prompt), beside an engine's step trace
    for n, row in enumerate(rows, 1):
        print(f"\rbench: prompt {n}/{len(rows)} ({printable(row['category'])})", end="", file=sys.stderr, flush=True)
        for _ in range(options.repeats):
            for name, (method, pairs) in names.items():
                t = runner.decode(request(method, pairs, row["prompt"]))
                runs[name].append((row, bench_report.record(t)))
                first.setdefault(method, (name, t))
            if torch_ar is not None:
                t = runner.decode(request("ar", [], row["prompt"]), prepared=Prepared(torch_ar, None, {}))
                runs[bench_report.TORCH_AR].append((row, bench_report.record(t)))
            for name in peers:
                runs[name].append((row, _hf_peer(name, hf, hf_draft, row["prompt"], options.sampling())))
            for worker in workers:
                for name, rec in worker.run(row).items():
                    elsewhere[name].append((row, rec))
    print(file=sys.stderr)
    found, sections = _engine_runs(engines, rows, options.sampling(), first)
    kept = {n: r for n, r in elsewhere.items() if not any(w.failure and n in w.names for w in workers)}
    report = bench_report.aggregate({**runs, **kept, **found}, rows, _header(target, draft_model, options))
    ours = {k: v for k, v in runs.items() if k != bench_report.TORCH_AR}
    report["differences"] = differences(target, ours, names)  # paradec's logits judge paradec's runs
    if workers:
        report["peers"] = {w.name: w.section() for w in workers}
    if options.batch:
        bench_batch.add(report, runner, names, rows, options, request, runs)
    if options.memory:  # the CLI's: the profiler counts every thread's allocations in the process
        report["memory"] = measure_memory(runner, names, rows[0], lambda m, pairs: request(m, pairs, rows[0]["prompt"]))
    if sections:
        report["engines"] = sections
    return report


def measure_memory(runner: Runner, names: dict, row: dict, request) -> dict:
    """Every row's memory (paradec.bench_memory), one untimed run each on the first prompt, after the timed ones;
    request(method, pairs) is the row's Request for a method."""
    from . import bench_memory as memory

    print("bench: memory, one untimed run per method on the first prompt", file=sys.stderr)
    found = {}
    for name, (method, pairs) in names.items():
        r = request(method, pairs)
        p = runner.prepare(r)
        found[name] = memory.measure(p.target, method, r.prompt, pairs, draft=p.draft, **r.sampling())["memory"]
    return {"methods": found, "prompt": row["id"], "how": memory.HOW, "process_peak_rss": memory.process_peak_rss()}


def _engine_runs(engines, rows: list[dict], settings: dict, first: dict) -> tuple[dict, dict]:
    """Every prompt on each engine and its baseline, after paradec's runs: (runs, their sections)."""
    found, sections = {}, {}
    for session in engines:
        print(f"bench: the prompts on {session.peer.kind} at {session.peer.url}", file=sys.stderr)
        try:
            runs, section, trace = workload.run(session, rows, settings)
        except engine_config.EngineError as e:
            raise methods.InputError(f"--peers {session.peer.kind}: {e}") from None
        label, mine = first.get(session.peer.matching, (None, None))
        found.update(runs)
        sections[session.peer.name] = {**section, "matching": label, "trace": trace and trace.to_dict(),
                                       "paradec_trace": mine.to_dict() if trace and mine else None}
    return found, sections


def differences(target, runs: dict, names: dict) -> list[dict]:
    """Every run whose tokens differ from AR's on the same prompt: where they first part, and the
    target's top-2 logit gap there (after AR's tokens so far). Greedy equality holds when a 1-token and
    an N-token forward agree on the argmax; in float32 they differ by ~1e-7, so a gap that small is a
    near-tie either may break, while a wide gap means a real difference (a bug, or a method that runs
    another model, as cllm does)."""
    out = []
    for name, recs in runs.items():
        for (row, rec), (_, ar) in zip(recs, runs["ar"]):
            if name == "ar" or rec["tokens"] == ar["tokens"]:
                continue
            pos = next((i for i, (a, b) in enumerate(zip(rec["tokens"], ar["tokens"])) if a != b),
                       min(len(rec["tokens"]), len(ar["tokens"])))
            method, pairs = names.get(name, (name, []))
            out.append({"method": name, "prompt": row["id"], "category": row["category"], "position": pos,
                        "ar_token": ar["tokens"][pos] if pos < len(ar["tokens"]) else None,
                        "token": rec["tokens"][pos] if pos < len(rec["tokens"]) else None,
                        "top2_gap": _top2_gap(target, ar["prompt_ids"] + ar["tokens"][:pos]),
                        "expected": bool(name in names and methods.lossy(method, methods.parse_params(method, pairs)))})
    return out


@torch.inference_mode()
def _top2_gap(target, ids: list[int]) -> float:
    """The target's logit gap between its two likeliest next tokens after ids, from the forward every run decodes
    with (either precision's)."""
    decoder = as_target(target.decoder)
    logits, _ = decoder.forward(decoder.new_cache(), ids, torch.arange(len(ids)), None, 1)
    top = torch.topk(logits[-1].float(), 2).values
    return float(top[0] - top[1])


def _hf_models(runner: Runner, model: str | None, draft: str | None, draft_model, peers) -> tuple:
    """What Hugging Face's peers run: the target's float32 weights (a 4-bit target's float32 sibling: generate
    has no 4-bit CPU path) and, for assisted generation, the draft made for them."""
    if not peers:
        return None, None
    from .models import load_draft

    hf = runner.float32(model)
    same = hf is runner.target(model)
    return hf, (draft_model if same else load_draft(draft, hf)) if draft and "hf_assisted" in peers else None


def _header(target, draft, options: Options) -> dict:
    """What the numbers depend on: the machine, the models and the run's settings."""
    return {
        "created": time.strftime("%Y-%m-%d %H:%M"), "timed": bench_report.TIMED,
        "machine": {**machine.describe(), "device": target.device, "dtype": target.dtype, "weights": target.weights},
        "model": target.name, "draft": draft.name if draft else None,
        "max_new_tokens": options.max_new_tokens, "temperature": options.temperature, "seed": options.seed,
        "repeats": options.repeats, "prompt_file": options.prompts, "split": options.split,
        "categories_kept": options.categories, "per_category": options.per_category, "limit": options.limit,
        "preset": options.preset, "device_profile": presets.device_profile(presets.device_info(target.device)).source,
    }


def shown(path: str) -> str:
    """A prompt file as the results name it: relative to the repository when it lies inside it."""
    root = ASSETS.parent
    full = Path(path).resolve()
    return str(full.relative_to(root)) if full.is_relative_to(root) else path


def _hf_peer(name: str, target, draft, prompt: str, settings: dict) -> dict:
    """Hugging Face generate on the same model and prompt; it reports no forward count, so no τ."""
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
    return {"tokens": out[0, ids.shape[1]:].tolist(), "prompt_ids": ids[0].tolist(), "wall_s": wall, "forwards": None,
            "drafted": 0, "accepted": 0, "positions": None}
