"""One run on loaded models, start to finish: validate the request, decode, and record a Trace."""
from __future__ import annotations

from collections.abc import Callable

import torch

from . import catalog, methods
from .core import engine
from .core.sampling import Sampler
from .core.steps import Step
from .models import Loaded, encode_prompt, eos_ids, free_memory, lora
from .traces.trace import Trace
from .tuning import presets

MAX_NEW_TOKENS = 2048  # documented cap on --max-new-tokens
MAX_BATCH = 64  # prompts decoded together (run's several prompts, bench --batch)
MAX_PROMPT_CHARS = 200_000
# Sampling computes in float32: logits / 1e-40 overflow to inf and a top-p of 1e-300 rounds to 0 and
# keeps no token, and both then sample from NaN. Below these bounds sampling is greedy in all but name.
MIN_TEMPERATURE = 0.01
MIN_TOP_P = 0.001
# Top-k at or above the vocabulary keeps every token; a larger one only makes an integer that a trace
# carries and its loader (paradec.traces.safe_json: 19 digits at most) refuses. Seeds: torch's signed 64 bits.
MAX_TOP_K = 2**20
SEEDS = (-(2**63), 2**63 - 1)
OUT_OF_MEMORY = "out of GPU memory: try a smaller tree/total_tokens, fewer new tokens, or a smaller preset"


class OutOfMemory(methods.InputError):
    """The run did not fit in the device's memory: like bad input, one line that tells the user
    what to shrink (the CLI exits 2, the app shows an error box; the service answers 507).
    Raised only once the run's memory is given back, so the next run starts clean."""


def validate(prompt: str, max_new_tokens: int, temperature: float, top_p: float, top_k: int, seed: int = 0) -> None:
    if not prompt or not prompt.strip():
        raise methods.InputError("the prompt is empty")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise methods.InputError(f"the prompt is too long ({len(prompt)} characters, at most {MAX_PROMPT_CHARS})")
    try:  # lone surrogates: bytes that were not UTF-8 (Python keeps argv's that way); tokenizers fail on them
        prompt.encode("utf-8")
    except UnicodeEncodeError:
        raise methods.InputError("the prompt is not valid text (bytes that are not UTF-8)") from None
    if not 1 <= max_new_tokens <= MAX_NEW_TOKENS:
        raise methods.InputError(
            f"max new tokens must be between 1 and {MAX_NEW_TOKENS}, got {catalog.shown(max_new_tokens)}")
    if not (temperature == 0.0 or MIN_TEMPERATURE <= temperature <= 10.0):
        raise methods.InputError(
            f"temperature must be 0 (greedy) or between {MIN_TEMPERATURE} and 10, got {temperature}")
    if not MIN_TOP_P <= top_p <= 1.0:
        raise methods.InputError(f"top-p must be between {MIN_TOP_P} and 1, got {top_p}")
    if not 0 <= top_k <= MAX_TOP_K:
        raise methods.InputError(f"top-k must be 0 (off) or between 1 and {MAX_TOP_K}, got {catalog.shown(top_k)}")
    if not SEEDS[0] <= seed <= SEEDS[1]:
        raise methods.InputError(f"seed must fit in signed 64 bits, got {catalog.shown(seed)}")


def check_pair(target: Loaded, draft: Loaded) -> None:
    """A draft must share the target's tokenizer: q and p must speak of the same token ids. Its
    embedding table may be smaller (padding rows differ between sizes of one family), not larger:
    a draft must never propose an id the target does not have."""
    same = target.tokenizer.get_vocab() == draft.tokenizer.get_vocab()
    if not same or draft.model.config.vocab_size > target.model.config.vocab_size:
        raise methods.InputError(f"draft {draft.name!r} does not share the tokenizer of target {target.name!r}")


def resolve_params(target: Loaded, method: str, given: dict) -> dict:
    """Every parameter's value: the given ones (parsed), then the sizes the target's device calls for, then the
    defaults."""
    return methods.resolve(method, given, presets.device_profile(presets.device_info(target.device)).params(method))


def run(target: Loaded, method: str, prompt: str, params: dict | list[str] | None = None, max_new_tokens: int = 64,
        temperature: float = 0.0, top_p: float = 1.0, top_k: int = 0, seed: int = 0, draft: Loaded | None = None,
        chat: bool = True, on_step: Callable[[Step], None] | None = None) -> Trace:
    """One run on models the caller loaded (the library's call; entry points go through paradec.runner)."""
    validate(prompt, max_new_tokens, temperature, top_p, top_k, seed)
    if draft is not None:
        check_pair(target, draft)
    params = resolve_params(target, method, methods.parse_params(method, params or {}))
    return decode(target, method, prompt, params, max_new_tokens, temperature, top_p, top_k, seed, draft, chat, on_step)


def decode(target: Loaded, method: str, prompt: str, params: dict, max_new_tokens: int, temperature: float,
           top_p: float, top_k: int, seed: int, draft: Loaded | None, chat: bool,
           on_step: Callable[[Step], None] | None) -> Trace:
    """Decode a checked request with resolved params into a Trace: a batch of one."""
    each = None if on_step is None else lambda _, step: on_step(step)
    return decode_batch(target, method, [prompt], params, max_new_tokens, temperature, top_p, top_k, seed, draft,
                        chat, each)[0]


def decode_batch(target: Loaded, method: str, prompts: list[str], params: dict, max_new_tokens: int,
                 temperature: float, top_p: float, top_k: int, seed: int, draft: Loaded | None, chat: bool,
                 on_step: Callable[[int, Step], None] | None = None) -> list[Trace]:
    """Decode checked prompts (each as validate() checks a prompt) as one batch, every target forward shared by
    the unfinished sequences (paradec.core.engine.decode_many), into one Trace per prompt; on_step(i, step)
    hears sequence i's steps. Each sequence has its own drafter and its own generator seeded with `seed`, so
    each trace's tokens, sampled ones too, are those its prompt gets alone.

    A trace's wall_s is read on the batch's shared clock: the timed time of the whole batch (every sequence's
    drafting, the shared forwards, every sequence's acceptance and commit) from its start until this sequence
    finished. The batch's own time is the largest; at batch 1 it is the sum of the steps' timings."""
    if not 1 <= len(prompts) <= MAX_BATCH:
        raise methods.InputError(f"a batch holds 1 to {MAX_BATCH} prompts, got {len(prompts)}")
    deltas = lora.needed(method, params)
    if deltas and target.deltas != str(deltas):  # the caller picks the target with lora.target_for
        raise methods.InputError(f"{method} decodes on a fine-tuned copy of the target, not on {target.name}")
    traces = [_trace(target, method, prompt, params, max_new_tokens, temperature, top_p, top_k, seed, draft, chat,
                     None if len(prompts) == 1 else i + 1) for i, prompt in enumerate(prompts)]
    drafters = [methods.make_drafter(method, params, draft.decoder if draft else None, target.view) for _ in prompts]
    clock = engine.Clock()
    if not _decode_into(traces, target, drafters, Sampler(temperature, top_k, top_p), seed, on_step, clock):
        del drafters  # their own state (a draft model's KV cache, EAGLE's draft tree) goes too
        free_memory()
        raise OutOfMemory(OUT_OF_MEMORY)
    for i, trace in enumerate(traces):
        # The decoding alone: each step's timed region (propose, verify, accept, commit), not the trace's
        # bookkeeping (top-k lists, step records) nor what the caller's on_step does between steps.
        trace.wall_s = clock.finished_ms[i] / 1e3
        trace.text = target.tokenizer.decode(trace.token_ids, skip_special_tokens=True)
        trace.token_text = token_texts(target.tokenizer, trace)
    return traces


def _trace(target: Loaded, method: str, prompt: str, params: dict, max_new_tokens: int, temperature: float,
           top_p: float, top_k: int, seed: int, draft: Loaded | None, chat: bool, nth: int | None) -> Trace:
    """The trace a prompt's steps go into, once its tokens fit the model's context (nth: which prompt of a batch)."""
    prompt_ids = encode_prompt(target.tokenizer, prompt, chat)
    limit = getattr(target.model.config, "max_position_embeddings", None)
    if limit and len(prompt_ids) + max_new_tokens > limit:
        raise methods.InputError(
            f"{'the prompt' if nth is None else f'prompt {nth}'} ({len(prompt_ids)} tokens) plus {max_new_tokens} "
            f"new tokens exceeds the model's context of {limit}"
        )
    return Trace(
        method=method, params=params, model=target.name, prompt=prompt, prompt_ids=prompt_ids,
        sampling={"temperature": temperature, "top_p": top_p, "top_k": top_k, "seed": seed},
        max_new_tokens=max_new_tokens, draft_model=draft.name if draft else None,
        device=target.device, dtype=target.dtype, weights=target.weights,
    )


def _decode_into(traces: list[Trace], target: Loaded, drafters: list, sampler: Sampler, seed: int, on_step,
                 clock: engine.Clock) -> bool:
    """Decode into each trace's steps; False when the device ran out of memory. The error is only noted
    here, not raised: until its except block ends, its traceback holds the decoder's frame and
    with it the run's KV caches, which free_memory could then not give back."""
    eos = eos_ids(target.tokenizer, target.model)
    sequences = [(d, t.prompt_ids, torch.Generator(device="cpu").manual_seed(seed)) for d, t in zip(drafters, traces)]
    try:
        for i, step in engine.decode_many(target.decoder, sequences, traces[0].max_new_tokens, sampler, eos, clock):
            traces[i].steps.append(step)
            if on_step:
                on_step(i, step)
    except torch.OutOfMemoryError:  # torch.cuda's is the same class
        return False
    return True


def token_texts(tokenizer, trace: Trace) -> dict:
    """Text of every token id the trace mentions, so it replays with no tokenizer."""
    ids = set(trace.prompt_ids)
    for s in trace.steps:
        ids.update(s.tokens)
        ids.update(t for t, _ in s.last_p_top + (s.residual_top or []))
        for n in s.nodes:
            ids.add(n.token)
            ids.update(t for t, _ in n.p_top + n.q_top)
        if s.record is not None:  # what the method's record names beyond the nodes (Medusa's heads, EAGLE's cut)
            ids.update(s.record.token_ids())
    return {str(i): tokenizer.decode([i]) for i in sorted(ids)}
