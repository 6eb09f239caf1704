"""Batched generation for the self-distillation data: B answers side by side through the fast forward.

A decode step of B sequences is a forward pass over B rows, and paradec's kernel multiplies up to 12 rows
for about the price of one (docs/kernel.md): a batch of 12 wrote 4.5x the tokens per
second of one sequence at a time here (218 against 48, 64-token answers, prefill included). Prompts are
left-padded to one width; a padded key is never attended to and positions count only real tokens, so
each row's tokens are the ones it would get alone (tested).
Greedy answers take the argmax; sampled ones draw from the Sampler's p with the run's own generator."""
from __future__ import annotations

import torch

from ..core.sampling import Sampler


@torch.inference_mode()
def generate(fast, prompts: list[list[int]], max_new_tokens: int, sampler: Sampler, gen: torch.Generator | None,
             eos: set[int], pad: int) -> list[list[int]]:
    """The answer to each prompt (its new tokens, up to and including an end-of-sequence token). `fast`: a
    paradec.cpu.fast.FastTarget; a Hugging Face model (another device or family) generates with its own generate."""
    if not hasattr(fast, "forward_batch"):
        return _hf_generate(fast, prompts, max_new_tokens, sampler, gen, eos, pad)
    b, width = len(prompts), max(map(len, prompts))
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    real = torch.tensor([[False] * (width - len(p)) + [True] * len(p) for p in prompts])
    cache = fast.new_cache(batch=b)
    cache.reserve(width + max_new_tokens)
    logits, _ = fast.forward_batch(cache, ids, (real.cumsum(1) - 1).clamp(min=0), prefill_allowed(real), 1)
    nxt = (real.sum(1) - 1)[:, None]  # each row's last position so far
    out, done = [[] for _ in prompts], torch.zeros(b, dtype=torch.bool)
    for step in range(max_new_tokens):
        token = _pick(logits[:, -1], sampler, gen)
        for r in torch.nonzero(~done).flatten().tolist():
            out[r].append(int(token[r]))
        done |= torch.tensor([int(t) in eos for t in token])
        if bool(done.all()) or step == max_new_tokens - 1:
            break
        real = torch.cat([real, torch.ones(b, 1, dtype=torch.bool)], dim=1)
        nxt = nxt + 1
        logits, _ = fast.forward_batch(cache, torch.where(done, pad, token)[:, None], nxt, real[:, None, :], 1)
    return out


def _hf_generate(model, prompts, max_new_tokens, sampler: Sampler, gen, eos: set[int], pad: int) -> list[list[int]]:
    width = max(map(len, prompts))
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=model.device)
    attn = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=model.device)
    kw = {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
    if not sampler.greedy:  # Hugging Face samples from the global generator: seeded from the run's own
        torch.manual_seed(int(torch.randint(2**62, (1,), generator=gen)))
        kw = {"do_sample": True, "temperature": sampler.temperature, "top_p": sampler.top_p, "top_k": sampler.top_k}
    seqs = model.generate(ids, attention_mask=attn, max_new_tokens=max_new_tokens, pad_token_id=pad, **kw)
    out = []
    for row in seqs[:, width:].tolist():
        end = next((i + 1 for i, t in enumerate(row) if t in eos), len(row))
        out.append(row[:end])
    return out


def prefill_allowed(real: torch.Tensor) -> torch.Tensor:
    """(B, L, L) for left-padded rows (real: (B, L) bool): causal, never a padded key; a padded query sees
    itself, so that no row of the attention is all masked."""
    width = real.shape[1]
    causal = torch.ones(width, width, dtype=torch.bool).tril()
    return causal[None] & real[:, None, :] | torch.eye(width, dtype=torch.bool)


def _pick(logits: torch.Tensor, sampler: Sampler, gen) -> torch.Tensor:
    """(B, V) logits -> (B,) tokens: argmax, or one draw from each row's shaped p."""
    if sampler.greedy:
        return logits.argmax(-1)
    return torch.multinomial(sampler.probs(logits), 1, generator=gen)[:, 0]
