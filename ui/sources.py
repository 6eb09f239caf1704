"""Where a page's trace comes from: recorded files in assets/traces, an imported file, or a
live run (ui.live). Recorded traces are parsed once per process and only read afterwards."""
from __future__ import annotations

import json
from pathlib import Path

import streamlit as st

from paradec.trace import Trace, TraceError

TRACE_DIR = Path(__file__).resolve().parents[1] / "assets" / "traces"
ARENA_DIR = TRACE_DIR / "arena"
MEDUSA_TREES_DIR = TRACE_DIR / "medusa-trees"  # one Medusa run per tree preset, on one prompt
IMPORTED = "imported"  # session-state key: method -> Trace imported by this browser session


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


def import_trace(data: bytes) -> Trace:
    """Parse an uploaded file; a TraceError's message is shown to the user as is. The loader checks
    what the panels rely on (paradec.trace_check), so a hand-edited file fails with a message."""
    trace = Trace.from_json(data)
    if not trace.steps:
        raise TraceError("this trace has no steps to replay")
    return trace


def imported(method: str) -> Trace | None:
    return st.session_state.get(IMPORTED, {}).get(method)


def keep_imported(trace: Trace) -> None:
    st.session_state.setdefault(IMPORTED, {})[trace.method] = trace


def drop_imported(method: str) -> None:
    st.session_state.get(IMPORTED, {}).pop(method, None)
