"""python -m paradec run: one prompt, or several decoded as one batch (they share each target forward).

Bad input raises methods.InputError (paradec.cli prints it as one line and exits 2)."""
from __future__ import annotations

import codecs
import json
import sys

from . import methods, outputs
from .traces import files
from .tuning import preset_file


def read_prompt_file(path: str) -> str:
    from .run import MAX_PROMPT_CHARS

    try:  # enough bytes for validate() to refuse; a FIFO or /dev/zero is refused unread
        data = files.read_regular(path, 4 * MAX_PROMPT_CHARS + 4)  # UTF-8: at most 4 bytes a character
        # not final: a character the byte limit cut in two is dropped, not an error
        text = codecs.getincrementaldecoder("utf-8")().decode(data, final=len(data) < 4 * MAX_PROMPT_CHARS + 4)
        return text.replace("\r\n", "\n").replace("\r", "\n")  # as reading in text mode did
    except (OSError, UnicodeDecodeError) as e:
        raise methods.InputError(f"cannot read prompt file {path}: {getattr(e, 'strerror', None) or e}") from None


def run_command(args) -> int:
    from .run import MAX_BATCH
    from .runner import Request, Runner

    if args.trace is not None and not args.trace.strip():  # "" would decode, then silently write nothing
        raise methods.InputError("--trace needs a file name")
    count = len(args.prompt or args.prompt_file)
    if count > MAX_BATCH:
        raise methods.InputError(f"at most {MAX_BATCH} prompts in one batch, got {count}")
    paths = _trace_paths(args.trace, count) if args.trace else []
    read = [("--prompt-file", f) for f in args.prompt_file or []] + [("--preset", args.preset)]
    writes = outputs.check([("trace", path) for path in paths], read + outputs.inputs(args, [(args.method, args.set)]),
                           args.force)
    prompts = args.prompt if args.prompt is not None else [read_prompt_file(f) for f in args.prompt_file]
    preset = preset_file.load(args.preset) if args.preset else None
    given = preset_file.pairs(preset, args.method) + args.set  # --set wins over the preset
    requests = [Request(args.method, prompt, given, args.max_new_tokens, args.temperature, args.top_p, args.top_k,
                        args.seed, args.draft, chat=not args.no_chat, model=args.model) for prompt in prompts]
    for n, request in enumerate(requests, 1):  # fail fast, before loading weights
        try:
            request.check()
        except methods.InputError as e:
            raise methods.InputError(f"prompt {n}: {e}" if len(requests) > 1 else str(e)) from None
    outputs.announce("run", writes)
    runner = Runner(args.device, args.dtype, weights=args.weights)
    prepared = runner.prepare(requests[0])
    if methods.lossy(args.method, prepared.params):  # once what it runs on is loaded: an error says only the error
        print(f"paradec: warning: LOSSY: {methods.lossy(args.method, prepared.params)}", file=sys.stderr)
    if len(requests) == 1:
        traces = [runner.decode(requests[0], prepared=prepared)]
    else:  # one batch: the prompts share each target forward
        from .run import decode_batch

        traces = decode_batch(prepared.target, args.method, prompts, prepared.params, draft=prepared.draft,
                              **requests[0].sampling())
    for trace, path in zip(traces, paths):
        try:
            trace.save(path)
        except OSError as e:
            raise methods.InputError(f"cannot write trace {path}: {e.strerror or e}") from None
    _print_runs(args, traces)
    return 0


def _trace_paths(path: str, n: int) -> list[str]:
    """--trace's file, or for a batch one per prompt beside it: t.json -> t-1.json, t-2.json, ..."""
    from pathlib import Path

    return [path] if n == 1 else [str(Path(path).with_stem(f"{Path(path).stem}-{i}")) for i in range(1, n + 1)]


def _print_runs(args, traces: list) -> None:
    """Each sequence's text (stdout) and figures (stderr); --json: its summary, or for a batch one object with
    every sequence's summary and the batch's time (the last sequence's finish on the batch's clock)."""
    n, wall = len(traces), max(t.wall_s for t in traces)
    if args.json:
        summaries = [t.summary() for t in traces]
        new = sum(s["new_tokens"] for s in summaries)
        files.print_out(json.dumps(summaries[0] if n == 1 else {
            "batch": n, "new_tokens": new, "wall_s": round(wall, 4), "tokens_per_s": round(new / max(wall, 1e-9), 3),
            "sequences": summaries}, ensure_ascii=False))
        return
    for i, trace in enumerate(traces, 1):
        s = trace.summary()
        alpha = "-" if s["acceptance"] is None else f"{s['acceptance']:.2f}"  # AR drafts nothing: no acceptance
        files.print_out(trace.text if n == 1 else f"=== sequence {i}/{n} ===\n{trace.text}")
        label = args.method if n == 1 else f"{args.method} {i}/{n}"
        print(f"\n[{label}] {s['new_tokens']} tokens, {s['target_forwards']} target forwards, tau {s['tau']:.2f}, "
              f"acceptance {alpha}, {s['tokens_per_s']:.1f} tok/s", file=sys.stderr)
    if n > 1:
        new = sum(len(t.token_ids) for t in traces)
        print(f"[{args.method}] batch of {n}: {new} tokens in {wall:.3f} s, {new / max(wall, 1e-9):.1f} tok/s "
              "(a sequence's tok/s: its tokens over the batch's time until it finished)", file=sys.stderr)
