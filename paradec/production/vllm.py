"""vLLM's speculative-decoding acceptance, read the two ways vLLM reports it.

Per request, when vLLM runs with --per-request-spec-decode-metrics summary|detailed (vLLM's docs,
features/speculative_decoding/acceptance_metrics; PR #48915): each response carries
metrics.speculative_decoding with num_spec_steps, num_draft_tokens, num_accepted_draft_tokens,
num_spec_tokens and acceptance_histogram (index j: steps that accepted exactly j drafts, the bonus
token left out); `detailed` adds the ordered per_step_accepted and per_step_drafted. It is null when
the flag is off, speculation is off or n > 1.

Server-wide, at /metrics (vllm/v1/spec_decode/metrics.py, SpecDecodingProm): the Prometheus counters
vllm:spec_decode_num_drafts, vllm:spec_decode_num_draft_tokens, vllm:spec_decode_num_accepted_tokens
and vllm:spec_decode_num_accepted_tokens_per_pos (label position, 0-based), exposed with the counter
suffix _total and labelled model_name and engine (vllm/v1/metrics/loggers.py). They are registered
only when speculation is on, and count every request since the server started, so paradec reads
them before and after its own requests and keeps the difference."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from ..core.tree import MAX_NODES
from .config import EngineError

PREFIX = "vllm:spec_decode_"
COUNTERS = {"drafts": "num_drafts", "draft_tokens": "num_draft_tokens", "accepted": "num_accepted_tokens"}
PER_POS = "num_accepted_tokens_per_pos"
SUMMARY = ("num_spec_steps", "num_draft_tokens", "num_accepted_draft_tokens", "num_spec_tokens",
           "acceptance_histogram")
STEPS = ("per_step_accepted", "per_step_drafted")
PER_REQUEST_FLAG = "--per-request-spec-decode-metrics"
MAX_COUNT = 2.0**53  # a counter past this is no longer an exact integer in a float
SPEC_FLAG = "--speculative-config '{\"method\": ..., \"num_speculative_tokens\": N}'"


@dataclass
class Counts:
    """Speculation in the engine's own counts: one request's, or a difference of counters."""

    drafts: int  # verify steps that checked a draft (num_spec_steps; the counter num_drafts)
    draft_tokens: int
    accepted: int  # accepted draft tokens, the bonus tokens left out
    reached: list[int] = field(default_factory=list)  # [i]: drafts whose accepted prefix covers position i + 1
    drafted_at: list[int] | None = None  # [i]: drafts that drafted position i + 1 (None: every draft did)
    steps_tested: int | None = None  # positions tested, counted step by step (None: not reported step by step)

    def tested(self) -> int | None:
        """Drafted positions tested, as paradec's Trace.tested counts a chain's: position i is tested when the
        draft reached i - 1 and drafted i. Exact from the step arrays; from the counts only when every draft
        drafted every position (position i is then tested by the drafts that reached i - 1); None otherwise."""
        if self.steps_tested is not None or not self.drafts:
            return self.steps_tested or 0
        if self.reached and self.draft_tokens == self.drafts * len(self.reached):
            return self.drafts + self.accepted - self.reached[-1]
        return None

    def positions(self) -> list[list[int]]:
        """[position, drafts that drafted it, drafts that reached it]: Trace.by_position's rows."""
        at = self.drafted_at or [self.drafts] * len(self.reached)
        return [[i + 1, n, r] for i, (n, r) in enumerate(zip(at, self.reached)) if n]


def _count(value) -> bool:
    return type(value) is int and value >= 0


def per_request(response: dict) -> dict | None:
    """The response's metrics.speculative_decoding, checked; None when vLLM sent none (the flag is off,
    or speculation is: /metrics tells which)."""
    metrics = response.get("metrics")
    spec = metrics.get("speculative_decoding") if isinstance(metrics, dict) else None
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise EngineError("metrics.speculative_decoding is not an object")
    for name in SUMMARY:
        value = spec.get(name)
        ok = all(map(_count, value)) if name == "acceptance_histogram" and isinstance(value, list) else _count(value)
        if not ok:
            raise EngineError(f"the per-request field metrics.speculative_decoding.{name} is absent or not a count "
                              f"(vLLM writes it with {PER_REQUEST_FLAG} summary or detailed)")
    if spec["num_spec_tokens"] > MAX_NODES or len(spec["acceptance_histogram"]) > MAX_NODES + 1:
        raise EngineError(f"metrics.speculative_decoding drafts more than {MAX_NODES} tokens a step: not an answer "
                          "paradec reads")  # another machine's answer: its sizes decide the work done here
    return spec


def steps_of(spec: dict) -> tuple[list[int], list[int]]:
    """The ordered per-step arrays (detailed mode only); EngineError naming the flag when absent."""
    acc, drafted = spec.get(STEPS[0]), spec.get(STEPS[1])
    for name, value in zip(STEPS, (acc, drafted)):
        if not isinstance(value, list) or not all(map(_count, value)):
            raise EngineError(f"the per-request field metrics.speculative_decoding.{name} is absent: the step trace "
                              f"needs vLLM started with {PER_REQUEST_FLAG} detailed")
    if len(acc) != len(drafted) or any(a > d for a, d in zip(acc, drafted)):
        raise EngineError("per_step_accepted and per_step_drafted do not pair up step by step")
    if max(drafted, default=0) > MAX_NODES:
        raise EngineError(f"per_step_drafted holds a step of more than {MAX_NODES} drafts: not an answer paradec reads")
    return acc, drafted


def counts_of(spec: dict) -> Counts:
    """A response's counts: exact per position from the step arrays (detailed); from the histogram
    otherwise, every step counted as drafting every position, as vLLM's own per-position rate does."""
    if all(isinstance(spec.get(name), list) for name in STEPS):
        acc, drafted = steps_of(spec)
        k = max(drafted, default=0)
        return Counts(len(acc), sum(drafted), sum(acc), [sum(a > i for a in acc) for i in range(k)],
                      [sum(d > i for d in drafted) for i in range(k)], sum(min(d, a + 1) for a, d in zip(acc, drafted)))
    hist = spec["acceptance_histogram"]
    reached = [sum(hist[j:]) for j in range(1, len(hist))]  # reached position j: accepted j or more
    return Counts(spec["num_spec_steps"], spec["num_draft_tokens"], spec["num_accepted_draft_tokens"], reached)


@dataclass
class Counters:
    """One reading of /metrics: the spec-decode counters summed over vLLM's engines (data parallel)."""

    drafts: float
    draft_tokens: float
    accepted: float
    per_pos: dict[int, float]

    def since(self, before: "Counters") -> Counts:
        """What happened between two readings (the server may have served others before)."""
        got = Counts(*(round(getattr(self, f) - getattr(before, f)) for f in COUNTERS))
        reached = [round(v - before.per_pos.get(p, 0.0)) for p, v in sorted(self.per_pos.items())]
        if min([got.drafts, got.draft_tokens, got.accepted, *reached]) < 0:
            raise EngineError("vLLM's spec-decode counters went down between two readings: the server restarted")
        got.reached = reached
        return got


def parse_metrics(text: str, model: str | None, url: str) -> Counters:
    """The counters in a /metrics page (Prometheus text exposition, parsed by prometheus_client);
    EngineError naming the flag when speculation is off or vLLM exposes no counters."""
    totals: dict[str, float] = defaultdict(float)
    per_pos: dict[int, float] = defaultdict(float)
    any_vllm = False
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                any_vllm = any_vllm or s.name.startswith("vllm:")
                if not s.name.startswith(PREFIX) or not s.name.endswith("_total"):
                    continue  # _created gauges and everything else
                if not 0 <= s.value <= MAX_COUNT:  # NaN fails too: round() of it, or of inf, raises
                    raise EngineError(f"{url}/metrics holds {s.name} = {s.value}: not a count paradec reads")
                if model and s.labels.get("model_name", model) != model:
                    continue
                name = s.name[len(PREFIX):-len("_total")]
                if name == PER_POS and s.labels.get("position", "").isdigit() and \
                        int(s.labels["position"]) < MAX_NODES:  # a position past any draft's: not vLLM's
                    per_pos[int(s.labels["position"])] += s.value
                elif name in COUNTERS.values():
                    totals[name] += s.value
    except EngineError:
        raise
    except ValueError as e:
        raise EngineError(f"{url}/metrics is not Prometheus text: {str(e)[:120]}") from None
    if not any_vllm:
        raise EngineError(f"the counters are missing: {url}/metrics has no vllm: metrics (vLLM serves them unless "
                          "started with --disable-log-stats)")
    if COUNTERS["drafts"] not in totals:
        raise EngineError(f"speculation is off at {url}: its /metrics has no {PREFIX}num_drafts counter; start "
                          f"vllm serve with {SPEC_FLAG}")
    return Counters(*(totals[name] for name in COUNTERS.values()), dict(per_pos))


def has_speculation(text: str) -> bool:
    """Whether a /metrics page holds the spec-decode counters (a baseline must not)."""
    return f"{PREFIX}num_drafts" in text
