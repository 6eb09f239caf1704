"""The one decode loop: propose -> verify (one target forward) -> accept -> commit.

decode_many() runs it for a batch of sequences that share each target forward (batched decoding), and
decode() is decode_many() with one sequence: there is one loop. Both are generators of Step records; a
streaming run and a batch run are the same loop. It never asks which method it runs: everything
method-specific is in the drafter.
"""
from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import torch

from .drafter import Drafter
from .sampling import Sampler
from .steps import Draft, Step, Verified
from .targets import as_target
from .verify import accept, record, target_forward_many


@dataclass
class Clock:
    """A batch's timed milliseconds: every sequence's propose, the shared forwards, every sequence's acceptance,
    KV-cache compaction and commit; not the trace's bookkeeping nor the reader's time between steps.
    finished_ms[i]: the clock when sequence i finished (at batch 1: the sum of its steps' draft_ms and verify_ms)."""

    ms: float = 0.0
    finished_ms: dict[int, float] = field(default_factory=dict)


class _Sequence:
    """One sequence of a batch: its drafter, its own KV cache and generator, what it has committed."""

    def __init__(self, target, drafter: Drafter, prompt_ids: list[int], gen, budget: int):
        self.drafter, self.prompt_ids, self.gen, self.budget = drafter, prompt_ids, gen, budget
        self.cache = target.new_cache()  # this run's own KV cache: the shared model is only read
        self.ctx = list(prompt_ids)
        self.uncached = list(prompt_ids)  # the first verify pass is also the prefill
        self.produced = self.index = 0
        self.done = budget <= 0
        self.draft, self.prefix, self.draft_ms, self.start_ms = Draft(), 0, 0.0, 0.0


@torch.inference_mode()
def decode(
    model,
    drafter: Drafter,
    prompt_ids: list[int],
    max_new_tokens: int,
    sampler: Sampler,
    gen: torch.Generator | None = None,
    eos_ids: set[int] = frozenset(),
) -> Iterator[Step]:
    """Yield one Step per target forward until max_new_tokens or an end-of-sequence token."""
    steps = decode_many(model, [(drafter, prompt_ids, gen)], max_new_tokens, sampler, eos_ids)
    try:
        for _, step in steps:
            yield step
    finally:  # a reader that stops early closes this generator, and with it the loop (its drafter ends)
        steps.close()


@torch.inference_mode()
def decode_many(
    model,
    sequences: Sequence[tuple[Drafter, list[int], torch.Generator | None]],
    max_new_tokens: int | Sequence[int],
    sampler: Sampler,
    eos_ids: set[int] = frozenset(),
    clock: Clock | None = None,
) -> Iterator[tuple[int, Step]]:
    """Batched decoding: sequences [(drafter, prompt ids, generator)] (their own drafters and generators, all of
    one method) share each target forward. Yields (sequence index, Step), each step of every unfinished
    sequence in index order, then the next forward. Each step, every unfinished sequence's drafter proposes
    (its own draft forwards: drafts are not batched), ONE target forward verifies every draft (each on its own
    cache, with its own mask), then each sequence accepts, compacts its cache and commits. A sequence leaves
    the batch at its budget (max_new_tokens, or one per sequence) or its end-of-sequence token; the rest go on.
    Each sequence's tokens are those it gets alone, and its draws come from its own generator.
    Timings: draft_ms is the sequence's own propose; verify_ms the shared forward plus its own acceptance and
    commit; start_ms on the batch's clock. clock, when given, is filled with the batch's timed total."""
    model, clock = as_target(model), clock or Clock()
    budgets = [max_new_tokens] * len(sequences) if isinstance(max_new_tokens, int) else list(max_new_tokens)
    runs = [_Sequence(model, d, p, g, b) for (d, p, g), b in zip(sequences, budgets, strict=True)]
    layers = {tuple(r.drafter.hidden_layers) for r in runs}
    assert len(layers) <= 1, f"one batch, one method: its drafters ask for the hidden layers {layers}"
    hidden_layers = layers.pop() if layers else ()
    begun = []
    try:
        for i, r in enumerate(runs):
            r.drafter.begin(r.prompt_ids)
            begun.append(r)
            if r.done:
                clock.finished_ms[i] = clock.ms
        origin = time.perf_counter()  # the drafters' own timings (a worker thread's) share this clock
        while active := [(i, r) for i, r in enumerate(runs) if not r.done]:
            for _, r in active:
                _propose(r, sampler, origin, clock)
            t0 = time.perf_counter()
            verified = target_forward_many(model, [(r.cache, r.uncached, r.draft) for _, r in active], hidden_layers)
            shared_ms = (time.perf_counter() - t0) * 1e3
            clock.ms += shared_ms
            for (i, r), v in zip(active, verified):
                step = _settle(r, v, shared_ms, sampler, eos_ids, clock)
                if r.done:
                    clock.finished_ms[i] = clock.ms
                yield i, step
    finally:  # a reader that stops early closes the generator: every drafter ends all the same
        for r in begun:
            r.drafter.end()


def _propose(r: _Sequence, sampler: Sampler, origin: float, clock: Clock) -> None:
    t0 = time.perf_counter()
    r.draft = r.drafter.propose(r.ctx, sampler, r.gen)
    r.draft_ms, r.start_ms = (time.perf_counter() - t0) * 1e3, (t0 - origin) * 1e3
    r.prefix = r.cache.get_seq_length() + len(r.uncached)  # where the verify pass writes the first node
    clock.ms += r.draft_ms


def _settle(r: _Sequence, verified: Verified, shared_ms: float, sampler: Sampler, eos_ids, clock: Clock) -> Step:
    """Accept, compact the cache, commit: the sequence's own part of a step after the shared forward."""
    t0 = time.perf_counter()
    draft = r.draft
    out = accept(draft, verified.logits, sampler, r.gen)
    r.cache.keep(r.prefix, out.path)  # the verify pass cached every node: only the accepted path stays
    tokens = [draft.tokens[i] for i in out.path] + [out.last]
    origins = ["accepted"] * len(out.path) + [out.last_origin]
    tokens, origins = _clip(tokens, origins, r.budget - r.produced, eos_ids)
    r.ctx += tokens
    r.drafter.commit(r.ctx, draft, out.path, verified)
    own_ms = (time.perf_counter() - t0) * 1e3  # the decoding ends here; what follows is the trace's bookkeeping
    clock.ms += own_ms
    nodes, last_p_top, residual_top = record(draft, verified.logits, out, sampler)
    accepted = out.path[: len(tokens)]  # what the budget or an end-of-sequence token cut was never committed
    for i in out.path[len(accepted):]:
        nodes[i].status = "unreached"
    step = Step(
        index=r.index, context_len=len(r.ctx) - len(tokens), nodes=nodes, accepted=accepted, tokens=tokens,
        origins=origins, last_p_top=last_p_top, residual_top=residual_top, draft_forwards=draft.forwards,
        verified=len(r.uncached) + len(draft.tokens) + len(draft.window), draft_ms=r.draft_ms,
        verify_ms=shared_ms + own_ms, start_ms=r.start_ms, record=r.drafter.record(draft, out),
    )
    r.produced += len(tokens)
    r.index += 1
    r.uncached = [out.last]  # the bonus token's KV is computed by the next verify pass
    r.done = r.produced >= r.budget or tokens[-1] in eos_ids
    return step


def _clip(tokens: list[int], origins: list[str], budget: int, eos_ids) -> tuple[list[int], list[str]]:
    """Drop what goes past the token budget or the first end-of-sequence token,
    so that every method stops exactly where autoregressive decoding stops."""
    n = min(len(tokens), budget)
    for i, t in enumerate(tokens[:n]):
        if t in eos_ids:
            n = i + 1
            break
    return tokens[:n], origins[:n]
