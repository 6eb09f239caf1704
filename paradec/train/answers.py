"""The target answers the training prompts (python -m paradec.train data): the self-distillation data.

Every prompt is answered `samples` times (the first greedy, the others sampled at T=0.8, top-p 0.95, each
batch seeded), a prompt with a follow-up also on each of its answers, through the batched fast forward
(paradec.train.generate; 12 rows a step cost about one). Resumable: a shard is written atomically per batch,
so an interrupted run loses at most the batch it was on, and a rerun skips what exists.

Two kinds of file, both safetensors:
- shard-s{sample}-{batch}.safetensors, the answers, compact (shipped in assets/data/selfdistill): ids (N,)
  uint16 (every row's tokens, end to end), length (R,) and answer_length (R,) int32 (a row's tokens, and
  how many at its end are the target's own), prompt (R,) int32 (the row's prompt: validation splits by
  prompt), pad (1,) int32. read_answers() gives them back as left-padded rows: tokens (R, L) int32, mask
  (R, L) bool (real tokens), answer (R, L) bool (the target's own tokens), prompt.
- features-s{sample}-{batch}-{hash}.safetensors, what the drafters learn from, computed from the answers by
  one teacher-forced pass (in a folder of their own: ~12 GB for the shipped answers, so the cache, not
  git): hidden (R, L, H) float16 (the final normed layer) and fuse (R, L, 3H) float16 (a low, a middle and
  a high layer, EAGLE-3's). The hash is the answers file's: features never outlive the answers they are of."""
from __future__ import annotations

import hashlib
import json
import math
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from ..core.sampling import Sampler
from ..drafters.eagle_head import fuse_layers
from ..models import Loaded, encode_prompt, eos_ids
from ..traces.files import replacing, write_atomic
from .generate import generate, prefill_allowed

SAMPLED = Sampler(temperature=0.8, top_p=0.95)


def generate_shards(target: Loaded, rows: list, out: Path, samples: int = 2, batch: int = 12,
                    max_new_tokens: int = 256, max_prompt_tokens: int = 1024, seed: int = 0,
                    features: Path | None = None, answer_tokens: int = 0) -> Path:
    """Answer every row (a prompt, or {"prompt", "follow_up"?}) `samples` times into `out`, then add the
    features into `features` (default: beside the answers). Prompts are batched by length, so that a batch
    pads little. answer_tokens > 0: stop making batches once the answers in `out` hold that many tokens (the
    greedy batches come first, then the sampled ones, shortest prompts first)."""
    out.mkdir(parents=True, exist_ok=True)
    rows = [r if isinstance(r, dict) else {"prompt": r} for r in rows]
    encoded = [(i, encode_prompt(target.tokenizer, r["prompt"])) for i, r in enumerate(rows)]
    encoded = sorted((e for e in encoded if len(e[1]) <= max_prompt_tokens), key=lambda e: (len(e[1]), e[0]))
    print(f"{len(encoded)} of {len(rows)} prompts fit in {max_prompt_tokens} tokens", file=sys.stderr)
    jobs = [(s, i) for s in range(samples) for i in range(0, len(encoded), batch)]
    have, t0, made, new_tokens = _answer_tokens(out), time.perf_counter(), 0, 0
    for n, (s, i) in enumerate(jobs):
        if answer_tokens and have >= answer_tokens:
            break
        path = _shard(out, s, i)
        if not path.exists():
            gen = torch.Generator().manual_seed(seed + 1000 * s + i) if s else None
            shard = pack(_answer(target, rows, encoded[i:i + batch], max_new_tokens, gen))
            _save(shard, path)
            made, got = made + 1, int(shard["answer_length"].sum())
            have, new_tokens = have + got, new_tokens + got
        left = sum(1 for j in jobs[n + 1:] if not _shard(out, *j).exists())
        if answer_tokens and new_tokens:  # batches still to make at this run's tokens per batch
            left = min(left, math.ceil(max(answer_tokens - have, 0) * made / new_tokens))
        eta = f"~{(time.perf_counter() - t0) / made * left / 60:.0f} min left" if made else "timing the first batch"
        print(f"\rself-distillation answers: {n + 1}/{len(jobs)} batches, {have:,} answer tokens, {eta}  ",
              end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    _manifest(out, len(jobs), {"prompts": len(encoded), "max_prompt_tokens": max_prompt_tokens, "samples": samples,
                               "batch": batch, "max_new_tokens": max_new_tokens, "seed": seed,
                               "answer_tokens_asked": answer_tokens or None})
    add_features(target, out, out if features is None else features)
    return out


def _manifest(out: Path, jobs: int, how: dict) -> None:
    """manifest.json: how the answers were made and what they hold (each shard read once); the features are
    remade from them."""
    lengths = [load_file(str(p))["answer_length"] for p in out.glob("shard-*.safetensors")]
    write_atomic(out / "manifest.json", json.dumps({
        **how, "batches": f"{len(lengths)} of {jobs}", "rows": sum(len(a) for a in lengths),
        "answer_tokens": sum(int(a.sum()) for a in lengths)}))


def _answer_tokens(out: Path) -> int:
    """How many of the answers' tokens in `out` are the target's own."""
    return sum(int(load_file(str(p))["answer_length"].sum()) for p in out.glob("shard-*.safetensors"))


def _shard(out: Path, s: int, i: int) -> Path:
    return out / f"shard-s{s}-{i:05d}.safetensors"


def _answer(target: Loaded, rows: list[dict], part: list[tuple[int, list[int]]], max_new_tokens: int,
            gen: torch.Generator | None) -> dict:
    """One batch: the answers, then the follow-ups' answers, as padded rows."""
    sampler, tok = SAMPLED if gen is not None else Sampler(), target.tokenizer
    eos, pad = eos_ids(tok, target.model), tok.eos_token_id
    first = generate(target.decoder, [p for _, p in part], max_new_tokens, sampler, gen, eos, pad)
    seqs = [(i, p, a) for (i, p), a in zip(part, first)]
    follow = [(i, _second_turn(tok, rows[i], a)) for (i, _), a in zip(part, first) if "follow_up" in rows[i]]
    if follow:
        second = generate(target.decoder, [p for _, p in follow], max_new_tokens, sampler, gen, eos, pad)
        seqs += [(i, p, a) for (i, p), a in zip(follow, second)]
    width = max(len(p) + len(a) for _, p, a in seqs)
    tokens = torch.full((len(seqs), width), pad, dtype=torch.int32)
    mask, answer = torch.zeros(len(seqs), width, dtype=torch.bool), torch.zeros(len(seqs), width, dtype=torch.bool)
    for r, (_, p, a) in enumerate(seqs):
        start = width - len(p) - len(a)
        tokens[r, start:] = torch.tensor(p + a, dtype=torch.int32)
        mask[r, start:], answer[r, width - len(a):] = True, True
    return {"tokens": tokens, "mask": mask, "answer": answer, "prompt": torch.tensor([i for i, _, _ in seqs])}


def _second_turn(tok, row: dict, answer: list[int]) -> list[int]:
    """The chat so far (the prompt, the target's answer, the follow-up) ready for the second answer."""
    chat = [{"role": "user", "content": row["prompt"]},
            {"role": "assistant", "content": tok.decode(answer, skip_special_tokens=True)},
            {"role": "user", "content": row["follow_up"]}]
    return list(tok.apply_chat_template(chat, add_generation_prompt=True, return_dict=True)["input_ids"])


def add_features(target: Loaded, out: Path, features: Path, batch: int = 8) -> None:
    """features-*.safetensors in `features` for every answers shard in `out` that has none (resumable the
    same way)."""
    features.mkdir(parents=True, exist_ok=True)
    shards = sorted(out.glob("shard-*.safetensors"))
    todo = {p: f for p in shards if not (f := features_of(p, features)).exists()}  # answers -> their features
    tokens = {p: int(load_file(str(p))["length"].sum()) for p in todo}  # the ETA counts tokens: shards differ
    t0, done = time.perf_counter(), 0
    for n, (path, feats) in enumerate(todo.items()):
        _save(_shard_features(target, read_answers(path), batch), feats)
        done += tokens[path]
        eta = (time.perf_counter() - t0) / done * (sum(tokens.values()) - done)
        print(f"\rself-distillation features: {len(shards) - len(todo) + n + 1}/{len(shards)} shards, "
              f"~{eta / 60:.0f} min left", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)


def features_of(shard: Path, features: Path) -> Path:
    """Where an answers shard's features are: named by its content, so that new answers get new features."""
    digest = hashlib.sha256(shard.read_bytes()).hexdigest()[:12]
    return features / f"{shard.stem.replace('shard-', 'features-', 1)}-{digest}.safetensors"


def pack(shard: dict) -> dict:
    """Left-padded rows -> the compact file: the real tokens end to end (the vocabulary fits in 16 bits)."""
    tokens, mask = shard["tokens"], shard["mask"]
    if int(tokens.max()) >= 2**16:
        raise ValueError("the compact answers file holds token ids below 65,536")
    pad = tokens[~mask][:1] if (~mask).any() else torch.zeros(1, dtype=torch.int32)
    return {"ids": tokens[mask].to(torch.uint16), "length": mask.sum(1).int(),
            "answer_length": shard["answer"].sum(1).int(), "prompt": shard["prompt"], "pad": pad.int()}


def read_answers(path: Path) -> dict:
    """An answers shard as left-padded rows (see the module's docstring)."""
    f = load_file(str(path))
    length, answer_length = f["length"].long(), f["answer_length"].long()
    width = int(length.max())
    tokens = torch.full((len(length), width), int(f["pad"][0]), dtype=torch.int32)
    cols = torch.arange(width)
    mask, answer = cols >= width - length[:, None], cols >= width - answer_length[:, None]
    tokens[mask] = f["ids"].to(torch.int32)  # boolean indexing is row-major: each row's tokens, left to right
    return {"tokens": tokens, "mask": mask, "answer": answer, "prompt": f["prompt"]}


def _shard_features(target: Loaded, shard: dict, batch: int) -> dict:
    """A shard's features, (R, L, H) and (R, L, 3H); what sits at its padding is never read. Rows go in
    `batch`es of similar lengths, each cropped to its longest row: a shard's rows differ by their answers'
    lengths, and the padding would otherwise be half as much work again."""
    mask, (rows, width) = shard["mask"], shard["mask"].shape
    out = {"hidden": torch.zeros(rows, width, target.model.config.hidden_size, dtype=torch.float16)}
    out["fuse"] = torch.zeros(rows, width, 3 * out["hidden"].shape[-1], dtype=torch.float16)
    order = torch.argsort(mask.sum(1), stable=True)
    for i in range(0, rows, batch):
        idx = order[i:i + batch]
        start = width - int(mask[idx].sum(1).max())  # left padding: every row's tokens end at the right
        part = _features(target, shard["tokens"][idx, start:].long(), mask[idx, start:])
        for k in out:
            out[k][idx, start:] = part[k]
    return out


@torch.inference_mode()
def _features(target: Loaded, seqs: torch.Tensor, mask: torch.Tensor) -> dict:
    """One teacher-forced pass over left-padded rows: the final hidden state and the fused features,
    through the forward every run decodes with (what the drafters will read at decode time)."""
    layers = (-1, *fuse_layers(target.model.config.num_hidden_layers))
    pos = (torch.cumsum(mask.long(), dim=1) - 1).clamp(min=0)  # left padding must not shift positions
    if target.fast is not None:
        _, states = target.fast.forward_batch(target.fast.new_cache(batch=len(seqs)), seqs, pos,
                                              prefill_allowed(mask), 1, layers)
    else:
        out = target.model(input_ids=seqs, attention_mask=mask.long(), position_ids=pos, output_hidden_states=True)
        states = torch.stack([out.hidden_states[i] for i in layers])
    return {"hidden": states[0].half(), "fuse": torch.cat(list(states[1:]), dim=-1).half()}


def _save(tensors: dict, path: Path) -> None:
    with replacing(path) as tmp:  # a rename is atomic: a shard on disk is always complete
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(tmp))
