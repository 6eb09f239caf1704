"""Step records and traces: plain dataclasses that round-trip through JSON.

A trace is everything the UI needs to replay a run with no torch and no tokenizer:
the method, its parameters, the model ids, the prompt, one record per decode step,
and the text of every token id that any record mentions. This module imports
only the standard library, so recorded traces can be replayed anywhere.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from .. import catalog
from ..core import typed_json
from ..core.records import Record, load, upgrade_step
from ..core.steps import Step
from . import safe_json
from .files import read_regular, write_atomic
from .trace_check import check, check_text

SCHEMA_VERSION = 2  # 2: a step's method-specific part is a typed record (schema 1: an untyped extras dict)
MAX_TRACE_BYTES = 50 * 1024 * 1024  # a trace file larger than this is refused unread



class TraceError(ValueError):
    """A trace file or object that is not a valid paradec trace."""


def tokens_per_forward(tokens: int, forwards: int) -> float:
    """THE τ: tokens committed per target forward, the bonus token included (AR = 1.00). An engine's
    counters give it too: each verify step commits its accepted drafts and one token of the target's,
    so (steps + accepted) / steps = 1 + accepted / steps, what vLLM and SGLang call the mean
    acceptance length."""
    return tokens / max(1, forwards)


def speedup(tokens: int, seconds: float, ar_tokens: int, ar_seconds: float) -> float:
    """THE speedup, used by bench, its CSV and every page: the method's decoding throughput over AR's,
    (tokens / seconds) / (AR tokens / AR seconds), both decoded in the same process from the same
    prompts; the seconds are the decoding's (a trace's wall_s). When the tokens are the same (greedy in
    float32) it equals AR's time / the method's time. 0 when either time is 0."""
    if seconds <= 0 or ar_seconds <= 0 or ar_tokens <= 0:
        return 0.0
    return (tokens / seconds) / (ar_tokens / ar_seconds)


def record_class(method: str) -> type[Record] | None:
    """The record a method's steps carry, from its description (None: a method paradec does not know,
    such as another engine's trace, or one that records nothing of its own)."""
    described = catalog.METHODS.get(method) if isinstance(method, str) else None
    return described.record if described else None


@dataclass
class Trace:
    method: str
    params: dict
    model: str
    prompt: str
    prompt_ids: list[int]
    sampling: dict  # temperature, top_p, top_k, seed
    max_new_tokens: int
    steps: list[Step] = field(default_factory=list)
    token_text: dict = field(default_factory=dict)  # str(token id) -> decoded text
    draft_model: str | None = None
    text: str = ""
    wall_s: float = 0.0  # the decoding's time: the sum of the steps' draft_ms and verify_ms, in seconds
    device: str = "cpu"
    dtype: str = "float32"
    weights: str = "f32"  # the target's: f32, or q4 (a GGUF's own 4-bit blocks, paradec.cpu.quant)
    schema: int = SCHEMA_VERSION

    # ---- metrics: one definition everywhere ----
    @property
    def token_ids(self) -> list[int]:
        return [t for s in self.steps for t in s.tokens]

    @property
    def new_tokens(self) -> int:
        return len(self.token_ids)

    @property
    def target_forwards(self) -> int:
        return sum(s.target_forwards for s in self.steps)

    @property
    def draft_forwards(self) -> int:
        return sum(s.draft_forwards for s in self.steps)

    @property
    def drafted(self) -> int:
        return sum(len(s.nodes) for s in self.steps)

    @property
    def accepted_drafts(self) -> int:
        return sum(len(s.accepted) for s in self.steps)

    @property
    def tau(self) -> float:
        """Tokens per target forward, bonus token included (AR = 1.00)."""
        return tokens_per_forward(self.new_tokens, self.target_forwards)

    def depth_acceptance(self) -> list[tuple[int, int, int]]:
        """THE acceptance per depth: (d, tested, accepted) for each depth tested. Depth d is tested in a step
        when the accepted path reached d - 1 (d = 1: the pending token) and the verifier tested a drafted child
        there: siblings are candidates for the same slot, one test; nodes under a rejected parent, and nodes a
        budget or an end-of-sequence token cut, are not tested at all. α_d = accepted / tested; in a chain,
        node d is tested when nodes 1..d-1 were accepted."""
        tested: dict[int, int] = {}
        accepted: dict[int, int] = {}
        for s in self.steps:
            for d in range(1, step_tested(s) + 1):
                tested[d] = tested.get(d, 0) + 1
                accepted[d] = accepted.get(d, 0) + (d <= len(s.accepted))
        return [(d, tested[d], accepted[d]) for d in sorted(tested)]

    @property
    def tested(self) -> int:
        """Drafted depths tested, summed over steps (see depth_acceptance)."""
        return sum(step_tested(s) for s in self.steps)

    @property
    def acceptance(self) -> float | None:
        """THE run's acceptance α: accepted drafted tokens / tested depths (see depth_acceptance), what
        τ's chain model (1 - α^(k+1)) / (1 - α) reads. None when no draft was tested (AR, or a hand-made trace
        whose drafts are all unreached): no acceptance."""
        return self.accepted_drafts / self.tested if self.tested else None

    @property
    def drafted_accepted(self) -> float | None:
        """Drafted tokens accepted: accepted / every drafted node, siblings and untested nodes included (None
        when nothing was drafted). Not the acceptance: a tree's many untested nodes pull it down."""
        return self.accepted_drafts / self.drafted if self.drafted else None

    def by_position(self) -> list[tuple[int, int, int]]:
        """Acceptance per draft position: (depth, steps that drafted that depth, steps whose
        accepted path reached it)."""
        drafted: dict[int, int] = {}
        reached: dict[int, int] = {}
        for s in self.steps:
            for d in {n.depth for n in s.nodes}:
                drafted[d] = drafted.get(d, 0) + 1
            for d in range(1, len(s.accepted) + 1):
                reached[d] = reached.get(d, 0) + 1
        return [(d, drafted[d], reached.get(d, 0)) for d in sorted(drafted)]

    def speedup_over(self, ar: "Trace") -> float:
        """This run's speedup against an AR run of the same prompt (see speedup)."""
        return speedup(self.new_tokens, self.wall_s, ar.new_tokens, ar.wall_s)

    def summary(self) -> dict:
        return {
            "method": self.method,
            "params": self.params,
            "new_tokens": self.new_tokens,
            "token_ids": self.token_ids,
            "text": self.text,
            "target_forwards": self.target_forwards,
            "draft_forwards": self.draft_forwards,
            "tau": round(self.tau, 4),
            "acceptance": rounded(self.acceptance),
            "drafted_accepted": rounded(self.drafted_accepted),
            "wall_s": round(self.wall_s, 4),
            "tokens_per_s": round(self.new_tokens / self.wall_s, 3) if self.wall_s else 0.0,
        }

    # ---- JSON ----
    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: dict) -> "Trace":
        if not isinstance(d, dict):
            raise TraceError("not a paradec trace: the top level is not a JSON object")
        if type(d.get("schema")) is not int or d["schema"] not in (1, SCHEMA_VERSION):  # type(): true == 1
            raise TraceError(f"not a paradec trace of schema 1 to {SCHEMA_VERSION} (found {d.get('schema')!r})")
        try:
            check_text(d)
            old, d = d["schema"], dict(d, schema=SCHEMA_VERSION)  # schema 1 is read as 2, step by step
            steps = d.get("steps", [])  # built after the rest: their record's class is the method's
            trace = typed_json.build(cls, {k: v for k, v in d.items() if k != "steps"})
            if not isinstance(steps, list):
                raise TypeError(f"field 'steps' should be a list, got {type(steps).__name__}")
            trace.steps = [_step(i, s, trace.method, old) for i, s in enumerate(steps)]
            check(trace)  # what the fields mean: parents, paths, counts, records, sizes
        except (TypeError, AttributeError, KeyError, ValueError) as e:
            raise TraceError(f"malformed paradec trace: {e}") from None
        return trace

    @classmethod
    def from_json(cls, text: str | bytes) -> "Trace":
        if len(text) > MAX_TRACE_BYTES:
            raise TraceError(f"trace file too large (over {MAX_TRACE_BYTES // 2**20} MiB)")
        try:
            data = safe_json.loads(text)
        except safe_json.Malformed as e:
            raise TraceError(f"malformed paradec trace: {e}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise TraceError(f"not a JSON trace file: {e}") from None
        except RecursionError:  # json recurses once per nesting level: "[[[[..." exhausts the stack
            raise TraceError("not a JSON trace file: nested too deeply") from None
        return cls.from_dict(data)

    def save(self, path) -> None:
        """Written whole or not at all: a full disk leaves the file that was there."""
        write_atomic(path, self.to_json())

    @classmethod
    def load(cls, path) -> "Trace":
        try:
            data = read_regular(path, MAX_TRACE_BYTES + 1)  # a FIFO would block forever
        except OSError as e:
            raise TraceError(f"cannot read trace file {path}: {e.strerror or e}") from None
        return cls.from_json(data)

    def text_of(self, token: int) -> str:
        return self.token_text.get(str(token), f"<{token}>")


def step_tested(s: Step) -> int:
    """The depths a step tested: each one its accepted path reached, and the next when a child of the path's
    last node (or of the pending token) was tested and rejected."""
    last = s.accepted[-1] if s.accepted else -1
    return len(s.accepted) + any(n.parent == last and n.status == "rejected" for n in s.nodes)


def rounded(x: float | None, digits: int = 4) -> float | None:
    """A rate as tables show it: None (no acceptance: nothing drafted) stays None."""
    return None if x is None else round(x, digits)


def _step(i: int, s, method: str, schema: int) -> Step:
    """Step i (a schema-1 step's extras upgraded to its record first); an error names the step."""
    try:
        return step_from_dict(upgrade_step(s, record_class(method)) if schema == 1 else s, method)
    except (TypeError, ValueError) as e:
        raise type(e)(f"step {i}: {e}") from None


def step_from_dict(d: dict, method: str) -> Step:
    """A step from a trace file; its record's class is the method's (paradec.catalog)."""
    if not isinstance(d, dict) or "record" not in d:
        raise TypeError("a step should be a JSON object with its field 'record'")
    step = typed_json.build(Step, {k: v for k, v in d.items() if k != "record"})
    step.record = load(record_class(method), d["record"], method)
    return step
