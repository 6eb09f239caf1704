"""python -m paradec run | bench | tune | serve | export-site: the contract that benchmarks, checks and scripts use.

Bad input exits with status 2 and one line on stderr, never a traceback."""
from __future__ import annotations

import argparse
import errno
import json
import os
import sys

from . import catalog, methods, outputs
from .cpu.kernels import KernelError
from .data import SPECBENCH
from .traces import files
from .traces.trace import TraceError
from .tuning import preset_file
from .tuning.preset_file import PresetError

MAX_ERROR_CHARS = 300  # an error echoes what it was given: 5,000 digits stay out of the terminal
MAX_REPEATS = 100  # counts have caps: a typo's 10**12 repeats would run until the machine is switched off
MAX_PROMPTS = 10**6


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        raise methods.InputError(message)


def integer(most: int | None = None):
    """An argparse type: an integer of at most `most` (no cap: None), refused in one short line. The lower
    bounds stay with the checks that explain them (--repeats 0, --queue -1)."""
    def parse(text: str) -> int:
        try:
            value = int(text) if len(text) <= 40 else None  # int() of 5,000 digits is refused, and slow
        except ValueError:
            value = None
        if value is None:
            raise argparse.ArgumentTypeError(f"expects an integer, got {catalog.shown(text)}")
        if most is not None and value > most:
            raise argparse.ArgumentTypeError(f"at most {most}, got {value}")
        return value

    return parse


def _sampling_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-new-tokens", type=integer(), default=64)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--top-k", type=integer(), default=0)
    p.add_argument("--seed", type=integer(), default=0)
    p.add_argument("--model", default=None, help="hub id or local path (default: embedded SmolLM2-135M-Instruct)")
    p.add_argument("--draft", default=None, help="draft model for sps: trained (default for the embedded model), "
                   "trained:DIR, a hub id, a local path, or self:N (the target's first N layers)")
    p.add_argument("--device", default=None, help="cuda, mps or cpu (default: the best available)")
    p.add_argument("--dtype", default=None, help="float32, bfloat16 or float16 (default: by device)")
    p.add_argument("--weights", default=None, choices=("q4", "f32"),
                   help="the target's weights on a CPU: q4, a GGUF file's own 4-bit blocks (the default for the "
                        "embedded model), or f32, dequantized to float32")
    p.add_argument("--no-chat", action="store_true", help="feed the prompt raw, without the chat template")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--preset", default=None, metavar="FILE",
                   help="a preset file (python -m paradec tune --preset-out): its settings, under --set's")
    p.add_argument("--force", action="store_true", help="replace read-only output files too (as a shell's >|)")


def parser() -> argparse.ArgumentParser:
    top = _Parser(prog="python -m paradec", description="Parallel decoding, run for real and traced.")
    sub = top.add_subparsers(dest="command", required=True, parser_class=_Parser)
    r = sub.add_parser("run", help="decode a prompt (or several, as one batch) with one method",
                       epilog=catalog.help_text(), formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("--method", required=True)
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a method parameter")
    src = r.add_mutually_exclusive_group(required=True)
    src.add_argument("--prompt", action="append", help="repeat it to decode several prompts as one batch "
                     "(they share each target forward)")
    src.add_argument("--prompt-file", action="append", help="a file holding one prompt (repeatable, as --prompt)")
    r.add_argument("--trace", help="write the trace JSON here (several prompts: NAME-1.json, NAME-2.json, ...)")
    _sampling_args(r)
    b = sub.add_parser("bench", help="every method against AR on a prompt file, in one process")
    b.add_argument("--methods", required=True,
                   help="comma-separated, e.g. pld,sps; a method with settings of its own: "
                        "sps[draft_length=learned;k=8]")
    b.add_argument("--prompts", default=str(SPECBENCH),
                   help="JSONL: prompt (or Spec-Bench turns), optional id, category (default: the shipped Spec-Bench)")
    b.add_argument("--limit", type=integer(MAX_PROMPTS), default=0, help="use the first N prompts (0 = all)")
    b.add_argument("--per-category", type=integer(MAX_PROMPTS), default=0,
                   help="use the first N prompts of each category (0 = all)")
    b.add_argument("--categories", default="", help="comma-separated categories to keep")
    b.add_argument("--split", default="all", help="all, train or heldout (Spec-Bench prompts kept out of training)")
    b.add_argument("--repeats", type=integer(MAX_REPEATS), default=1,
                   help=f"decode every prompt N times per method (at most {MAX_REPEATS})")
    b.add_argument("--out", help="write the results here as JSON, and as CSV beside it (same name, .csv)")
    b.add_argument("--peers", action="append", default=[], metavar="PEER",
                   help="'hf': also time Hugging Face generate in the same run; 'llamacpp': llama.cpp on the same "
                   "GGUF file (scripts/install_peers.sh); KIND=URL[,model=NAME][,method=METHOD]"
                   "[,baseline=URL] (KIND vllm or sglang): the same prompts on a production engine (repeatable)")
    b.add_argument("--no-memory", dest="memory", action="store_false",
                   help="skip the memory figures (one untimed, profiled run per method after the timed ones)")
    b.add_argument("--threads", type=integer(), default=0,
                   help="torch threads for every method (0 = torch's default); mirror's worker thread adds its own")
    b.add_argument("--batch", type=_batch_sizes, default=(), metavar="SIZES",
                   help="batch sizes, e.g. 1,2,4,8,16: every method also decodes the prompts in batches of each "
                        "size (by_batch in the results)")
    _sampling_args(b)
    from .tuner.tune import add_parser as tune_parser

    tune_parser(sub, _sampling_args, integer)
    from .site.export import add_parser as site_parser

    site_parser(sub)
    s = sub.add_parser("serve", help="an HTTP service that runs decoders here and returns traces")
    s.add_argument("--host", default="127.0.0.1", help="0.0.0.0 to serve other machines")
    s.add_argument("--port", type=integer(), default=8765)
    s.add_argument("--model", action="append", default=[], help="a target to serve (repeatable; default: embedded)")
    s.add_argument("--draft", action="append", default=[], help="a draft requests may name, besides self:N and trained")
    s.add_argument("--weights", action="append", default=[], metavar="SPEC",
                   help="weights a request's heads, head or adapter may name, besides the shipped ones (repeatable)")
    s.add_argument("--queue", type=integer(10_000), default=8,
                   help="runs that may wait per model behind the running one")
    s.add_argument("--engine", action="append", default=[], metavar="KIND=URL[,...]",
                   help="a production engine peer POST /engine may name (as bench --peers; repeatable)")
    s.add_argument("--device", default=None)
    s.add_argument("--dtype", default=None)
    s.add_argument("--model-weights", default=None, choices=("q4", "f32"),
                   help="the targets' weights on a CPU: q4 (the GGUF's own blocks; the embedded model's default), f32")
    s.add_argument("--ray", action="store_true", help="serve on Ray Serve: a local Ray started here "
                   "(needs requirements-ray.txt)")
    s.add_argument("--ray-address", default=None, metavar="ADDR", type=_ray_address,
                   help="join this Ray cluster instead: HOST:PORT, ray://HOST:PORT or 'auto' (the one this machine "
                   "belongs to)")
    s.add_argument("--replicas", type=integer(1000), default=1,
                   help="with --ray: replicas per model (one run at a time each)")
    s.add_argument("--max-replicas", type=integer(1000), default=0,
                   help="with --ray: scale on load between --replicas and this many (0: a fixed number)")
    return top


def _ray_address(text: str) -> str:
    from .production.address import AddressError, ray_address

    try:
        return ray_address(text)
    except AddressError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _batch_sizes(text: str) -> tuple[int, ...]:
    from .bench_batch import parse_sizes
    from .run import MAX_BATCH

    try:
        return tuple(parse_sizes(text, MAX_BATCH))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def main(argv: list[str] | None = None) -> int:
    from huggingface_hub.utils import logging as hub_logging
    from transformers.utils import logging as hf_logging

    files.keep_std_streams()  # before any file is opened: `>&-` must not hand stdout's number to a results file
    hf_logging.disable_progress_bar()  # the CLI owns this process: keep its output clean
    hf_logging.set_verbosity_error()  # deprecation notices from inside generate() are not the user's to fix
    hub_logging.set_verbosity_error()  # offline, a hub id logs two lines per download retry
    try:
        args = parser().parse_args(argv)
        if args.command == "run":
            from .cli_run import run_command

            return run_command(args)
        if args.command == "export-site":
            from .site.export import export_command

            return export_command(args)
        if args.command == "tune":
            from .tuner.tune import tune_command

            return tune_command(args)
        if args.command == "serve" and (args.ray or args.ray_address):
            return _ray(args)
        if args.command == "serve" and (args.replicas != 1 or args.max_replicas):
            raise methods.InputError("--replicas and --max-replicas need --ray (or --ray-address)")
        if args.command == "serve":
            from .serving.serve import serve_command

            _check_address(args.host)  # before loading models, and not as uvicorn's log and exit 3
            return serve_command(args)
        return _bench(args)
    except (methods.InputError, files.Refused, TraceError, PresetError, KernelError, _model_error()) as e:
        return _error(str(e))
    except (files.StdoutError, BrokenPipeError) as e:
        if e.errno == errno.EPIPE:  # the reader left (`| head`): nothing to say, the files are written
            return _left()
        return _error(e.strerror)
    except KeyboardInterrupt:
        print("paradec: interrupted", file=sys.stderr)
        return 130


def _left() -> int:
    """Exit status 141 (128 + SIGPIPE), as a shell reports a writer whose reader left; stdout and stderr
    pointed at /dev/null so that exit's own flush has nowhere to fail."""
    null = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(null, fd)
    os.close(null)
    return 141


def _error(message: str) -> int:
    """One line on stderr, however long or many-lined the message; exit status 2."""
    print(f"paradec: error: {methods.one_line(message, MAX_ERROR_CHARS)}", file=sys.stderr)
    return 2


def _check_address(host: str) -> None:
    """That serve can listen on host (the name resolves to an address of this machine's)."""
    import socket

    try:
        family, kind, _, _, address = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM,
                                                         flags=socket.AI_PASSIVE)[0]
        with socket.socket(family, kind) as s:
            s.bind((address[0], 0, *address[2:]))  # any free port: --port is serve_command's to check and take
    except (OSError, ValueError) as e:  # UnicodeError: a name IDNA cannot encode
        why = getattr(e, "strerror", None) or e
        raise methods.InputError(f"cannot serve on {catalog.shown(host)}: {why}") from None


def _ray(args) -> int:
    try:
        from .serving.ray_serve import serve_ray_command
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] != "ray":
            raise
        raise methods.InputError("--ray needs Ray Serve: pip install -r requirements-ray.txt") from None
    return serve_ray_command(args)


def _model_error():
    from .models import ModelError

    return ModelError


def _bench(args) -> int:
    from pathlib import Path

    import torch

    from . import bench_report, models
    from .bench import Options, bench, engines, load_prompts, shown, variants
    from .runner import Runner

    names = preset_file.apply(variants(args.methods), preset_file.load(args.preset) if args.preset else None)
    if args.repeats < 1:
        raise methods.InputError(f"--repeats must be at least 1 (got {args.repeats})")
    if not 0 <= args.threads <= (os.cpu_count() or 1):
        raise methods.InputError(f"--threads must be between 0 (default) and this machine's {os.cpu_count()} cores")
    if args.threads:  # this process is the benchmark's own: no one else's runs share its thread pool
        torch.set_num_threads(args.threads)
    workers = _workers(args)  # llama-cpp-python installed, the embedded model, greedy: before any work
    read = [("--prompts", args.prompts), ("--preset", args.preset)]
    writes = outputs.check([("results", args.out), ("results' CSV", Path(args.out).with_suffix(".csv"))] if args.out
                           else [], read + outputs.inputs(args, names.values()), args.force)  # before any decoding
    rows = load_prompts(args.prompts, args.limit, args.categories, args.split, args.per_category)
    peers = engines(args.peers, names)  # reachable, the model served, speculation on: before any decoding
    spec = models.draft_for(args.draft, args.model, any(methods.needs_draft_model(m) for m, _ in names.values()))
    options = Options(args.max_new_tokens, args.temperature, args.top_p, args.top_k, args.seed, not args.no_chat,
                      args.repeats, shown(args.prompts), args.split, args.categories, args.per_category, args.limit,
                      args.preset and shown(args.preset), args.memory, args.batch)
    outputs.announce("bench", writes)
    runner = Runner(args.device, args.dtype, weights=args.weights)
    runner.target(args.model)  # loaded before the first prompt: loading is not a method's time
    try:
        report = bench(runner, names, rows, options, _hf_peers(args, spec), peers, args.model, spec, workers)
    finally:
        for worker in workers:
            worker.close()
    if args.out:
        try:
            csv_path = bench_report.save(report, args.out)
        except OSError as e:
            raise methods.InputError(f"cannot write results {args.out}: {e.strerror}") from None
        print(f"bench: wrote {args.out} and {csv_path}", file=sys.stderr)
    files.print_out(json.dumps(report, ensure_ascii=False) if args.json else bench_report.format_report(report))
    return 0


def _workers(args) -> list:
    """The peers that run in processes of their own (--peers llamacpp), their needs checked."""
    if "llamacpp" not in args.peers:
        return []
    import torch

    from .peers import llamacpp

    llamacpp.check(args.model, args.temperature)
    return [llamacpp.LlamaCpp(torch.get_num_threads())]  # the same threads as paradec's methods


def _hf_peers(args, draft: str | None) -> list[str]:
    """Hugging Face's peers, when --peers hf is among the peers."""
    from .bench import PEERS

    return [p for p in PEERS if p != "hf_assisted" or draft] if "hf" in args.peers else []
