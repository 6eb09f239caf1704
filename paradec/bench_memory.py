"""Memory per method, measured: what a method costs beside AR, split as the article's first limit names it.

- weights: the bytes of the tensors a run reads, by owner: the target, the CPU kernel's packed copy of its
  projections (paradec.cpu.fast), the draft model, and the method's own heads and adapters (whatever its drafter
  holds beyond those). Measured: the storages reachable from each object, each storage counted once.
- kv: the target's KV cache at the widest verify pass, the tree's (or window's) rows included before the
  verifier compacts them: rows from the trace, bytes per row from the model's shape (derived).
- held: what the run holds between steps, measured as allocated (every KV cache, preallocated room included,
  the draft's cache, pools, EAGLE's features); activations: the most a step allocates beyond it (measured).
- peak: weights + the run's highest allocated bytes.

The run's allocations are read from torch's profiler (profile_memory): every allocation and free of the
run's device in time order, so one process can measure method after method (its resident set only ever
grows, so peak RSS cannot tell them apart). Measuring slows a run: bench measures in an untimed extra run."""
from __future__ import annotations

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from . import methods

MARK = "paradec.step_end"
HOW = ("weights measured (tensor bytes by owner; packed: the CPU kernel's copy of the target's projections); kv "
       "derived (the target's rows at the widest verify pass, tree rows included, x bytes per row); held and "
       "activations measured (the profiler's allocations: held between steps, a step's rise above it); peak = "
       "weights + the run's highest allocation; one untimed run on the first prompt")
MAX_DEPTH = 12


def storages(obj) -> dict[int, int]:
    """{storage address: bytes} of every tensor reachable from obj (attributes, lists, dicts, modules)."""
    found: dict[int, int] = {}
    _walk(obj, found, set(), 0)
    return found


def _walk(obj, found: dict, seen: set, depth: int) -> None:
    if depth > MAX_DEPTH or id(obj) in seen or obj is None or isinstance(obj, (str, bytes, int, float, type)):
        return
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        if obj.device.type != "meta":
            s = obj.untyped_storage()
            found[s.data_ptr()] = s.nbytes()
        return
    if isinstance(obj, dict):
        children = list(obj.values())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        children = list(obj)
    else:
        children = list(getattr(obj, "__dict__", {}).values())
    for child in children:
        _walk(child, found, seen, depth + 1)


def weights(target, draft, drafter) -> dict[str, int]:
    """Bytes of weights by owner; each storage is counted once, for the first owner that reads it."""
    owners = {"target": target.model, "packed": target.fast, "draft": draft, "heads": drafter}
    counted: set[int] = set()
    out = {}
    for name, obj in owners.items():
        mine = {k: v for k, v in storages(obj).items() if k not in counted} if obj is not None else {}
        counted |= mine.keys()
        out[name] = sum(mine.values())
    return out


def kv_bytes_per_token(model) -> int:
    """Keys and values of one position in every layer: 2 * layers * KV heads * head dim * element size."""
    cfg = model.config
    heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    size = torch.empty((), dtype=model.dtype).element_size()  # the cache's (float32 at 4 bits too)
    return 2 * cfg.num_hidden_layers * heads * head_dim * size


def widest_rows(trace) -> int:
    """The target's cache rows at the widest verify pass: what was cached before it plus every row it
    fed (the pending token, the tree or chain, a Lookahead window), before the rejected ones are dropped."""
    rows = 0
    for s in trace.steps:
        before = s.context_len - (len(trace.prompt_ids) if s.index == 0 else 1)
        rows = max(rows, before + s.verified)
    return rows


def measure(target, method: str, prompt: str, params=None, draft=None, **settings) -> dict:
    """One untimed run of method on prompt: its memory (bytes, bench_report.MEMORY_FIELDS) and the trace it decoded."""
    from .run import run
    from .tuning.presets import device_info, device_profile

    sized = device_profile(device_info(target.device)).params(method)  # what run() builds, built here too
    parsed = methods.resolve(method, methods.parse_params(method, params or {}), sized)
    drafter = methods.make_drafter(method, parsed, draft.decoder if draft else None, target.view)
    owned = weights(target, draft, drafter)
    del drafter
    kind = torch.device(target.device).type
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if kind == "cuda" else [])
    with profile(activities=activities, profile_memory=True) as prof:
        trace = run(target, method, prompt, params, draft=draft, on_step=_mark, **settings)
    curve = allocation_curve(prof, kind)
    out = {f"weights_{k}": v for k, v in owned.items()}
    out.update(kv=widest_rows(trace) * kv_bytes_per_token(target.model), **_split(curve))
    out["peak"] = sum(owned.values()) + out.pop("top")
    return {"memory": out, "trace": trace}


def process_peak_rss() -> int:
    """This process's peak resident set in bytes, every method's runs and the loading together (Linux, macOS)."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def _mark(step) -> None:
    with record_function(MARK):  # a timestamp on the profiler's own clock: the step ends here
        pass


def allocation_curve(prof, kind: str) -> list[tuple[int, int | None]]:
    """[(bytes allocated since the run began, None), ...] in time order, with (level, MARK) at each step's end."""
    events = prof.profiler.kineto_results.events()  # every allocation and free, as torch's memory profiler reads them
    want = torch.device(kind).type.upper()
    items = sorted((e.start_ns(), e.name(), e.nbytes() if e.name() == "[memory]" else 0, str(e.device_type()))
                   for e in events if e.name() in ("[memory]", MARK))
    level, curve = 0, []
    for _, name, nbytes, device in items:
        if name == MARK:
            curve.append((level, MARK))
        elif device.endswith(want):
            level += nbytes
            curve.append((level, None))
    return curve


def _split(curve: list) -> dict:
    """held: the level at the last step's end; activations: the most any step rose above its start level."""
    top = held = start = act = 0
    peak_in_step = 0
    for level, mark in curve:
        top, peak_in_step = max(top, level), max(peak_in_step, level)
        if mark:
            act, held, start, peak_in_step = max(act, peak_in_step - start), level, level, level
    return {"held": held, "activations": act, "top": top}
