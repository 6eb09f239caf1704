"""What the operator of this app offers, read from the environment (on a Space: its variables):
where live runs go, and which models, drafts and weights a visitor may pick. Visitors and links
choose among these; nothing a visitor types becomes a URL, a path or a hub id that this process
opens (on a hosted Space that would reach the host's network and fill its disk). The GPU presets
(paradec.tuning.presets, the code's own list) add what a session fetched from them (its session state)."""
from __future__ import annotations

import os
import re
import sys

import streamlit as st

from paradec.production import config as engine_config
from paradec.production.address import AddressError, http_url
from paradec.traces import files
from paradec.tuning import preset_file, presets

from .i18n import _

BACKEND = "PARADEC_BACKEND"  # URL of `python -m paradec serve` that runs live traces; unset: this process
MODELS = "PARADEC_MODELS"  # comma-separated hub ids or folders offered besides the embedded model
DRAFTS = "PARADEC_DRAFTS"  # drafts offered besides trained and self:N
WEIGHTS = "PARADEC_WEIGHTS"  # Medusa heads, EAGLE heads, adapters offered besides the shipped ones
PRESET = "PARADEC_PRESET"  # a preset file (python -m paradec tune --preset-out): live runs start from its settings
ENGINE = engine_config.ENV  # a production engine peer (vLLM, SGLang) the Production engine page asks
EMBEDDED = "embedded"
SELF_DRAFT = re.compile(r"self:\d{1,3}")  # the target's own first N layers: nothing to read


class Refused(ValueError):
    """A choice the operator does not offer; the message is one line for the visitor."""


MAX_ENTRY = 300  # characters: a path or a hub id, not a paste of something else


def _entries(name: str) -> list[str]:
    return [x.strip() for x in os.environ.get(name, "").split(",") if x.strip()]


def _usable(entry: str) -> bool:
    """A listed model, draft or weights a page can show and a loader can be given: printable, of a path's
    length (whether it loads is the loader's to say, in an error box, when a visitor picks it)."""
    return len(entry) <= MAX_ENTRY and entry.isprintable()


def _listed(name: str) -> list[str]:
    """The operator's list, without the entries that name nothing usable (problems() logs them)."""
    return [x for x in _entries(name) if _usable(x)]


def backend() -> str:
    """The backend's URL, "" for none. Only http(s) to a host: anything else is the operator's typo,
    refused as a whole rather than guessed at."""
    url = os.environ.get(BACKEND, "").strip()
    try:
        return http_url(url, BACKEND) if url else ""
    except AddressError:
        raise Refused(_("{variable} must be an http(s) URL such as http://gpu-box:8765, got {url}").format(
            variable=BACKEND, url=repr(url[:80]))) from None


def engine() -> engine_config.Peer | None:
    """The operator's engine peer (KIND=URL[,model=..][,method=..][,baseline=URL]), None for none; a typo
    is refused whole, as the backend's is."""
    try:
        return engine_config.from_env()
    except engine_config.EngineError as e:
        raise Refused(f"{ENGINE}: {e}") from None


def models(fetched: list[str] = ()) -> list[str]:
    """The target models a visitor may pick, the embedded one first."""
    return list(dict.fromkeys([EMBEDDED, *_listed(MODELS), *fetched]))


def check_model(spec: str, fetched: list[str] = ()) -> None:
    if spec not in models(fetched):
        raise Refused(_("model {model} is not offered here (the operator lists models in {variable})").format(
            model=repr(spec[:80]), variable=MODELS))


def check_draft(spec: str, fetched: list[str] = ()) -> None:
    if not (spec == "trained" or SELF_DRAFT.fullmatch(spec) or spec in _listed(DRAFTS) or spec in fetched):
        raise Refused(_("draft {draft} is not offered here: trained, self:N (N layers of the target), or one the "
                        "operator lists in {variable}").format(draft=repr(spec[:80]), variable=DRAFTS))


def check_weights(named: dict[str, str], fetched: list[str] = ()) -> None:
    """named: the run's parameters that name weights (paradec.methods.weights_named)."""
    for name, value in named.items():
        if value not in _listed(WEIGHTS) and value not in fetched:
            raise Refused(_("{name} {value} is not offered here: the shipped weights, or ones the operator lists "
                            "in {variable}").format(name=name, value=repr(value[:80]), variable=WEIGHTS))


@st.cache_resource(show_spinner=False)
def _preset(path: str, mtime: float) -> dict:  # mtime in the key: a rewritten file is re-read
    return preset_file.load(path)


def preset() -> dict | None:
    """The operator's preset file (None without one). A file that does not load is the operator's typo,
    refused whole as the backend's is."""
    path = os.environ.get(PRESET, "").strip()
    if not path:
        return None
    try:
        return _preset(path, os.stat(path).st_mtime)
    except OSError as e:  # missing, a link loop (a FIFO or a folder is the loader's PresetError)
        raise Refused(_("{variable}: cannot read {path}: {error}").format(variable=PRESET, path=repr(path[:80]),
                                                                          error=e.strerror)) from None
    except preset_file.PresetError as e:
        raise Refused(f"{PRESET}: {e}") from None


def preset_settings(method: str) -> dict:
    """The operator's preset's settings for a method: {} without one, or with one that does not load (the
    sidebar says so on live pages: ui.sidebar)."""
    try:
        return preset_file.settings(preset(), method)
    except Refused:
        return {}


def problems() -> list[str]:
    """One line for each operator setting the app cannot use; it serves the rest (recorded traces always)."""
    found = []
    for check in (backend, engine, preset):
        try:
            check()
        except Refused as e:
            found.append(str(e))
    for name in (MODELS, DRAFTS, WEIGHTS):
        found += [f"{name}: {x[:80]!r} is not printable or longer than {MAX_ENTRY} characters: left out"  # not taught
                  for x in _entries(name) if not _usable(x)]
    return found


@st.cache_resource(show_spinner=False)
def check_at_start() -> list[str]:
    """problems(), logged once per process (the first page a visitor opens after the server starts)."""
    found = problems()
    for line in found:
        print(f"paradec: operator setting refused: {files.printable(line)}", file=sys.stderr,  # not taught
              flush=True)
    return found


READY = "sb.gpu_ready"  # (preset name, role -> local folders) once ui.gpu_presets fetched a preset


def fetched() -> dict[str, list[str]]:
    """What this session fetched from a preset (the code's list, never a visitor's words), offered to
    its live runs: "model" -> the target's hub id, each other role -> its local folders."""
    ready = st.session_state.get(READY)
    preset = next((p for p in presets.PRESETS if ready and p.name == ready[0]), None)
    if preset is None:
        return {}
    return {"model": [preset.target.repo], **ready[1]}
