"""The one decode loop: propose -> verify (one target forward) -> accept -> commit.

decode() is a generator of Step records; a streaming run and a batch run are the same
loop. It never asks which method it runs: everything method-specific is in the drafter.
"""
from __future__ import annotations

import time
from collections.abc import Iterator

import torch

from ..drafters.base import Drafter
from .sampling import Sampler
from .steps import Step
from .targets import as_target
from .verify import accept, record, target_forward


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
    model = as_target(model)  # a Hugging Face model, or a paradec.cpu.fast.FastTarget
    cache = model.new_cache()  # this run's own KV cache: the shared model is only read
    ctx = list(prompt_ids)
    uncached = list(prompt_ids)  # the first verify pass is also the prefill
    drafter.begin(prompt_ids)
    origin = time.perf_counter()  # the drafter's own timings (a worker thread's) share this clock: begin() is short
    produced = index = 0
    try:
        while produced < max_new_tokens:
            t0 = time.perf_counter()
            draft = drafter.propose(ctx, sampler, gen)
            t1 = time.perf_counter()
            prefix = cache.get_seq_length() + len(uncached)
            verified = target_forward(model, cache, uncached, draft, drafter.hidden_layers)
            out = accept(draft, verified.logits, sampler, gen)
            cache.keep(prefix, out.path)  # the verify pass cached every node: only the accepted path stays
            tokens = [draft.tokens[i] for i in out.path] + [out.last]
            origins = ["accepted"] * len(out.path) + [out.last_origin]
            tokens, origins = _clip(tokens, origins, max_new_tokens - produced, eos_ids)
            ctx += tokens
            drafter.commit(ctx, draft, out.path, verified)
            t2 = time.perf_counter()  # the decoding ends here; what follows is the trace's bookkeeping
            nodes, last_p_top, residual_top = record(draft, verified.logits, out, sampler)
            accepted = out.path[: len(tokens)]  # what the budget or an end-of-sequence token cut was never committed
            for i in out.path[len(accepted):]:
                nodes[i].status = "unreached"
            step = Step(
                index=index, context_len=len(ctx) - len(tokens), nodes=nodes, accepted=accepted, tokens=tokens,
                origins=origins, last_p_top=last_p_top, residual_top=residual_top, draft_forwards=draft.forwards,
                verified=len(uncached) + len(draft.tokens) + len(draft.window), draft_ms=(t1 - t0) * 1e3,
                verify_ms=(t2 - t1) * 1e3, start_ms=(t0 - origin) * 1e3, record=drafter.record(draft, out),
            )
            produced += len(tokens)
            index += 1
            uncached = [out.last]  # the bonus token's KV is computed by the next verify pass
            yield step
            if tokens[-1] in eos_ids:
                return
    finally:  # a consumer that stops early closes the generator: the drafter ends all the same
        drafter.end()


def _clip(tokens: list[int], origins: list[str], budget: int, eos_ids) -> tuple[list[int], list[str]]:
    """Drop what goes past the token budget or the first end-of-sequence token,
    so that every method stops exactly where autoregressive decoding stops."""
    n = min(len(tokens), budget)
    for i, t in enumerate(tokens[:n]):
        if t in eos_ids:
            n = i + 1
            break
    return tokens[:n], origins[:n]
