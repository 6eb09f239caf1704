"""Where a page's trace comes from: recorded files in assets/traces, an imported file, or a
live run (ui.live). Recorded traces are parsed once per process and only read afterwards."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import streamlit as st

from paradec import catalog
from paradec.traces.trace import Trace, TraceError
from paradec.traces.trace_check import MAX_MASK_CELLS, MAX_TOKENS, drawable

from .i18n import _

TRACE_DIR = Path(__file__).resolve().parents[1] / "assets" / "traces"
ARENA_DIR = TRACE_DIR / "arena"
MEDUSA_TREES_DIR = TRACE_DIR / "medusa-trees"  # one Medusa run per tree preset, on one prompt
MEDUSA_CURVE = TRACE_DIR.parent / "drafters" / "medusa-smollm2" / "learning_curve.json"  # scripts/medusa_curve.py
# An upload is parsed (about 0.2 s of CPU a MB) before it is cut to what a page draws: 10 MiB parse in about 2 s,
# and the first 100 steps of a 2,000-step Medusa run on its 63-node tree take 28 MB. .streamlit/config.toml agrees.
MAX_UPLOAD = 10 * 2**20
IMPORTED = "imported"  # session-state key: page's method -> Trace imported by this browser session


@st.cache_resource(max_entries=64, show_spinner=False)
def _load(path: str, mtime: float) -> Trace:  # mtime in the key: a re-recorded file is re-read
    return Trace.load(path)


def load(path: Path) -> Trace:
    return _load(str(path), path.stat().st_mtime)


@st.cache_resource(show_spinner=False)
def _json(path: str, mtime: float) -> dict:
    return json.loads(Path(path).read_text())


def json_file(path: Path) -> dict:
    """A measurement file the repository ships (cached until it changes)."""
    return _json(str(path), path.stat().st_mtime)


def forward_cost() -> dict | None:
    """Measured cost of one target forward by tokens per pass, or None if not recorded."""
    path = TRACE_DIR / "forward_cost.json"
    return _json(str(path), path.stat().st_mtime) if path.is_file() else None


def medusa_curve() -> dict | None:
    """Medusa's heads trained on shares of the training prompts (scripts/medusa_curve.py), or None if not shipped."""
    return json_file(MEDUSA_CURVE) if MEDUSA_CURVE.is_file() else None


def recorded(method: str) -> dict[str, Path]:
    """Recorded traces of one method: label (file name after 'method-') -> path."""
    files = sorted(TRACE_DIR.glob(f"{method}-*.json"))
    return {f.stem[len(method) + 1 :]: f for f in files}


def arena() -> dict[str, Trace]:
    """The recorded arena set: every method on one prompt, AR first."""
    files = sorted(ARENA_DIR.glob("*.json"), key=lambda f: (f.stem != "ar", f.stem))
    return {f.stem: load(f) for f in files}


def medusa_trees() -> dict[str, Trace]:
    """The recorded Medusa runs of several tree presets on one prompt: preset name -> trace."""
    return {f.stem: load(f) for f in sorted(MEDUSA_TREES_DIR.glob("*.json"))}


def import_trace(data: bytes) -> tuple[Trace, str | None]:
    """Parse an uploaded file; a TraceError's message is shown to the user as is. The loader checks
    what the panels rely on (paradec.traces.trace_check), so a hand-edited file fails with a message. A trace
    larger than a page draws within its budget is cut to its first steps: the second value says so."""
    if len(data) > MAX_UPLOAD:
        raise TraceError(_("the file is larger than the {mib} MiB a page imports: record fewer tokens "
                           "(python -m paradec run --max-new-tokens N --trace FILE)").format(mib=MAX_UPLOAD // 2**20))
    trace = Trace.from_json(data)
    if not trace.steps:
        raise TraceError(_("this trace has no steps to replay"))
    n = drawable(trace)
    if n == len(trace.steps):
        return trace, None
    note = _("Only the first {n} of its {total} steps are replayed: a page draws at most {cells:,} attention-mask "
             "cells and {tokens:,} committed tokens of one trace.").format(n=n, total=len(trace.steps),
                                                                        cells=MAX_MASK_CELLS, tokens=MAX_TOKENS)
    return first_steps(trace, n), note


def first_steps(trace: Trace, n: int) -> Trace:
    """The trace's first n steps, its wall time cut to their share of the steps' measured time (τ and the
    speed the pages quote are then those of the steps shown)."""
    timed = [s.draft_ms + s.verify_ms for s in trace.steps]
    share = sum(timed[:n]) / sum(timed) if sum(timed) > 0 else n / len(timed)
    return dataclasses.replace(trace, steps=trace.steps[:n], wall_s=trace.wall_s * share)


def imported(method: str) -> Trace | None:
    return st.session_state.get(IMPORTED, {}).get(method)


def keep_imported(trace: Trace) -> None:
    st.session_state.setdefault(IMPORTED, {})[page_of(trace.method)] = trace


def page_of(method: str) -> str:
    """The method whose player replays a trace of `method`: itself, or, for a method that shares a page without
    being one of its versions (cllm on Jacobi's), the page's first method."""
    described = catalog.METHODS.get(method)
    if described is None or described.version:
        return method
    return catalog.pages()[described.page].name


def drop_imported(method: str) -> None:
    st.session_state.get(IMPORTED, {}).pop(method, None)
