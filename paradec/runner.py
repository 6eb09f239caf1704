"""The runner: one object between every entry point and the decoders.

It owns the loaded targets (loaded once, shared read-only), the drafts and fine-tuned copies made
for them, one waiting line per target, and the step from a request to a trace: check the request,
size the method for the device, parse its parameters once, pick what it decodes on, decode. The
command line (`paradec.cli`), `bench`, `serve`, the app's live mode (`ui/live.py`) and
`scripts/record_traces.py` are thin adapters over it, side by side."""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property

from . import methods, models
from .core.steps import Step
from .lanes import Lane, Turn
from .models import Loaded, gguf, loading, lora
from .run import MAX_BATCH, check_pair, decode, decode_batch, resolve_params, validate
from .traces.trace import Trace

MAX_DRAFTS = 4  # draft models kept per target (the oldest goes first)


@dataclass(frozen=True)
class Request:
    """One run, as every entry point asks for it. params: the given method parameters only (a dict,
    or the CLI's KEY=VALUE strings); what they leave out is sized for the device."""
    method: str
    prompt: str
    params: dict | list[str] = field(default_factory=dict)
    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int = 0
    draft: str | None = None  # a draft spec; None: the target's own default when the method needs one
    chat: bool = True
    model: str | None = None  # a target spec the runner has (or may load); None: its first
    weights: str | None = None  # q4 or f32: refused unless the target was loaded so (None: as it was loaded)

    def check(self) -> dict:
        """Check everything that needs no model (the prompt, the sampling, the given parameters) and
        return the given parameters, typed. Done once per request: the result is kept."""
        return self._given

    def sampling(self) -> dict:
        """The decoding settings besides the method's: what paradec.run.run takes as keywords."""
        return dict(max_new_tokens=self.max_new_tokens, temperature=self.temperature, top_p=self.top_p,
                    top_k=self.top_k, seed=self.seed, chat=self.chat)

    @cached_property
    def _given(self) -> dict:
        validate(self.prompt, self.max_new_tokens, self.temperature, self.top_p, self.top_k, self.seed)
        return methods.parse_params(self.method, self.params)  # not the defaults: the device sizes come first


@dataclass(frozen=True)
class Prepared:
    """What a request decodes with: the model (the target or its fine-tuned copy), the draft, and
    every parameter's value (given ones, then the device's sizes, then the defaults)."""
    target: Loaded
    draft: Loaded | None
    params: dict


class _Model:
    """One loaded target, its waiting line, and what was made for it (touched only in its lane or
    under the runner's lock)."""

    def __init__(self, loaded: Loaded, queue: int):
        self.loaded, self.lane = loaded, Lane(queue)
        self.drafts: dict[str, Loaded] = {}
        self.tuned: dict[str, Loaded] = {}  # fine-tuned copies (cllm's), by deltas folder


class Runner:
    def __init__(self, device: str | None = None, dtype: str | None = None, queue: int = 8,
                 loaded: dict[str, Loaded] | None = None, weights: str | None = None):
        """device, dtype: for targets loaded on demand (default: the best this machine has); queue:
        runs that may wait per target behind the running one; loaded: targets already loaded, by spec;
        weights: q4 or f32 for targets loaded on demand (default: paradec.models.gguf.pick_weights's)."""
        self.device, self.dtype, self.queue = device, dtype, queue  # picked when a target loads
        self.weights = weights
        self._f32: dict[str, Loaded] = {}  # a 4-bit target's float32 sibling (bench's peers), by spec
        self._torch: dict[str, Loaded | None] = {}  # bench's ar_torch targets, by spec
        self._models = {spec: _Model(t, queue) for spec, t in (loaded or {}).items()}
        self._lock = threading.Lock()  # loading: two sessions asking for one model load it once

    def specs(self) -> list[str]:
        return list(self._models)

    def target(self, spec: str | None = None) -> Loaded:
        return self._model(spec).loaded

    def lane(self, spec: str | None = None) -> Lane:
        return self._model(spec).lane

    def draft(self, spec: str, model: str | None = None) -> Loaded:
        m = self._model(model)
        with self._lock:
            if spec not in m.drafts:
                if len(m.drafts) >= MAX_DRAFTS:
                    m.drafts.pop(next(iter(m.drafts)))
                m.drafts[spec] = models.load_draft(spec, m.loaded)
            return m.drafts[spec]

    def drafts(self, model: str | None = None) -> list[Loaded]:
        return list(self._model(model).drafts.values())  # list(): one C call, safe while a run adds one

    def decodes_on(self, method: str, params: dict, model: str | None = None) -> Loaded:
        """The target, or the fine-tuned copy the method decodes on (cllm's), made once and kept."""
        m = self._model(model)
        folder = lora.needed(method, params)
        if folder is None:
            return m.loaded
        with self._lock:
            if str(folder) not in m.tuned:
                m.tuned[str(folder)] = lora.target_for(m.loaded, method, params)
            return m.tuned[str(folder)]

    def prepare(self, r: Request) -> Prepared:
        """Check the request, then load (once) what it decodes with."""
        given = r.check()
        spec = models.draft_for(r.draft, r.model or self._first(), methods.needs_draft_model(r.method))
        target = self.target(r.model)
        if r.weights and r.weights != target.weights:
            raise methods.InputError(f"{target.name} runs on {target.weights} weights here, not {r.weights}")
        params = resolve_params(target, r.method, given)
        draft = self.draft(spec, r.model) if spec else None
        if draft is not None:
            check_pair(target, draft)
        return Prepared(self.decodes_on(r.method, params, r.model), draft, params)

    def decode(self, r: Request, on_step: Callable[[Step], None] | None = None,
               prepared: Prepared | None = None) -> Trace:
        """Decode now, whatever waits in the line: for a caller that holds the turn (a benchmark's set of
        runs, timed back to back) or owns the process (the command line)."""
        p = prepared or self.prepare(r)
        return decode(p.target, r.method, r.prompt, p.params, r.max_new_tokens, r.temperature, r.top_p, r.top_k,
                      r.seed, p.draft, r.chat, on_step)

    def decode_batch(self, r: Request, prompts: list[str],
                     on_step: Callable[[int, Step], None] | None = None) -> list[Trace]:
        """Decode now several prompts as one batch with r's method and settings (r.prompt unused): one trace
        each, every target forward shared (paradec.run.decode_batch)."""
        self.check_batch(r, prompts)
        p = self.prepare(r)
        return decode_batch(p.target, r.method, prompts, p.params, r.max_new_tokens, r.temperature, r.top_p,
                            r.top_k, r.seed, p.draft, r.chat, on_step)

    def run_batch(self, r: Request, prompts: list[str], on_step: Callable[[int, Step], None] | None = None,
                  on_wait: Callable[[int], None] | None = None) -> tuple[list[Trace], Turn]:
        """run() for a batch: every prompt checked before it waits, then one turn of the target's lane."""
        self.check_batch(r, prompts)
        with self.turn(r.model, on_wait) as turn:
            return self.decode_batch(r, prompts, on_step), turn

    @staticmethod
    def check_batch(r: Request, prompts: list[str]) -> None:
        """A batch's checks that need no model: their number, r's settings and parameters, every prompt."""
        if not 1 <= len(prompts) <= MAX_BATCH:
            raise methods.InputError(f"a batch holds 1 to {MAX_BATCH} prompts, got {len(prompts)}")
        r.check()
        for k, prompt in enumerate(prompts, 1):
            try:
                validate(prompt, r.max_new_tokens, r.temperature, r.top_p, r.top_k, r.seed)
            except methods.InputError as e:
                raise methods.InputError(f"prompt {k}: {e}") from None

    def run(self, r: Request, on_step: Callable[[Step], None] | None = None,
            on_wait: Callable[[int], None] | None = None) -> tuple[Trace, Turn]:
        """Check the request (a bad one never waits), wait for the target's turn, then decode in it.
        on_wait(ahead) is called while waiting; either callback may raise to give up."""
        r.check()
        with self.turn(r.model, on_wait) as turn:
            return self.decode(r, on_step), turn

    @contextmanager
    def turn(self, model: str | None = None, on_wait=None) -> Iterator[Turn]:
        """Hold the target's lane: nothing else decodes on it until the block ends (QueueFull when full)."""
        with self.lane(model).turn(on_wait) as turn:
            yield turn

    def _first(self) -> str:
        return next(iter(self._models), models.EMBEDDED)

    def _model(self, spec: str | None) -> _Model:
        spec = spec or self._first()
        if spec not in self._models:
            with self._lock:
                if spec not in self._models:
                    weights = gguf.pick_weights(spec, self.device, self.weights, self.dtype)
                    self._models[spec] = _Model(models.load(spec, self.device, self.dtype, weights=weights),
                                                self.queue)
        return self._models[spec]

    def float32(self, spec: str | None = None) -> Loaded:
        """The target with float32 weights: itself, or a 4-bit target's float32 sibling (loaded once; what
        Hugging Face's peers run)."""
        m, key = self._model(spec), spec or self._first()
        with self._lock:
            if key not in self._f32:
                self._f32[key] = loading.float32_sibling(m.loaded)
            return self._f32[key]

    def torch_products(self, spec: str | None = None) -> Loaded | None:
        """The target in float32 decoded by paradec's forward with torch's matrix products instead of the kernel
        (bench's ar_torch row: the baseline a slow kernel would otherwise hide behind), made once; None where
        paradec's CPU forward does not run."""
        base, key = self.float32(spec), spec or self._first()
        with self._lock:
            if key not in self._torch:
                self._torch[key] = gguf.torch_products(base)
            return self._torch[key]
