"""What a command of `python -m paradec` reads and writes, checked by paradec.traces.files' rule before any work:
an output never replaces a file the command reads (prompts, a preset, a tune state, weights) nor another output
of the same command, a read-only one only with --force, and the command says what it will write."""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from . import methods
from .cache import cache_dir
from .data import ASSETS
from .traces import files

TRAINED = "trained"  # sps's draft spec for a trained draft: trained or trained:FOLDER


def check(outputs: files.Named, inputs: files.Named, force: bool) -> files.Named:
    """files.plan over the outputs (what, path) against the inputs: files.Refused, one line, for an output the
    rule refuses. The outputs, for announce() once the inputs are read, before the first model loads."""
    files.plan(outputs, inputs, force)
    return outputs


def announce(prog: str, outputs: files.Named) -> None:
    if outputs:
        files.announce(prog, outputs)


def inputs(args, runs: Iterable[tuple[str, list[str] | dict]] = ()) -> list[tuple[str, str]]:
    """What a run, bench or tune reads besides its own file options, as (what, path): the model, the draft and
    the weights its methods name where they are local paths, the shipped drafters and the converted embedded
    model (folders: their existing files are read). runs: (method, its KEY=VALUE pairs or parameters)."""
    read = [("the shipped drafters", str(ASSETS / "drafters")), ("paradec's cache", str(cache_dir()))]
    draft = args.draft or ""
    for what, spec in [("--model", args.model), ("--draft", draft.partition(":")[2] if draft.startswith(
            f"{TRAINED}:") else draft)]:
        if spec and os.path.exists(spec):
            read.append((what, spec))
    for method, given in runs:
        for name, value in methods.weights_named(method, methods.parse_params(method, given)).items():
            path = str(value).partition(":")[2] if str(value).startswith(f"{TRAINED}:") else str(value)
            if os.path.exists(Path(path).expanduser()):
                read.append((f"{method}'s {name}", str(Path(path).expanduser())))
    return read
