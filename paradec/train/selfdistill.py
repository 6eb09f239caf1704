"""Self-distillation data: the target answers training prompts, and its answers (token ids)
and last hidden states are stored as shards in a cache folder (not in git).

Generation is batched and seeded; finished shards are kept, so an interrupted run resumes
where it stopped. Shards are safetensors: tokens (B, L) int32, mask (B, L) bool (which
positions hold real tokens), answer (B, L) bool (which are the target's own answer),
hidden (B, L, H) float16 (the target's final-norm hidden state at each position), fuse
(B, L, 3H) float16 (the outputs of a low, a middle and a high layer, EAGLE-3's features;
shards written before it existed get it added on the next run)."""
from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from ..data import ASSETS, SPECBENCH, first_turn, read_jsonl, split_of
from ..models import Loaded, encode_prompt

EXTRA_PROMPTS = ASSETS / "train_prompts.jsonl"


def training_prompts(specbench: Path = SPECBENCH, extra: Path = EXTRA_PROMPTS, seed: int = 0) -> list[str]:
    """Spec-Bench's training split plus the prompts the repo ships, never the held-out split,
    in a seeded shuffle so that any first N prompts mix all categories."""
    rows = [r for r in read_jsonl(specbench) if split_of(r) == "train"]
    rows += read_jsonl(extra) if extra.exists() else []
    prompts = [p for p in map(first_turn, rows) if p]
    random.Random(seed).shuffle(prompts)
    return prompts


def generate_shards(target: Loaded, prompts: list[str], out: Path, samples: int = 2, batch: int = 8,
                    max_new_tokens: int = 128, max_prompt_tokens: int = 384, seed: int = 0) -> Path:
    """Answer every prompt `samples` times (the first greedy, the others sampled at T=0.8)."""
    out.mkdir(parents=True, exist_ok=True)
    encoded = [encode_prompt(target.tokenizer, p) for p in prompts]
    encoded = [e for e in encoded if len(e) <= max_prompt_tokens]  # cutting a prompt would cut its chat header
    print(f"{len(encoded)} of {len(prompts)} prompts fit in {max_prompt_tokens} tokens", file=sys.stderr)
    jobs = [(s, i) for s in range(samples) for i in range(0, len(encoded), batch)]
    t0 = time.perf_counter()
    for n, (s, i) in enumerate(jobs):
        path = out / f"shard-s{s}-{i:05d}.safetensors"
        if not path.exists():  # written atomically below: an existing shard is complete
            _save(_answer(target, encoded[i : i + batch], max_new_tokens, seed + 1000 * s + i if s else None), path)
        elif "fuse" not in (old := load_file(str(path))):
            _save({**old, **_features(target, old["tokens"].long(), old["mask"])}, path)
        done = n + 1
        eta = (time.perf_counter() - t0) / done * (len(jobs) - done)
        print(f"\rself-distillation data: {done}/{len(jobs)} batches, ~{eta / 60:.0f} min left", end="", file=sys.stderr)
    print(file=sys.stderr)
    (out / "manifest.json").write_text(json.dumps({"prompts": len(encoded), "samples": samples,
                                                   "max_new_tokens": max_new_tokens, "seed": seed}))
    return out


@torch.inference_mode()
def _answer(target: Loaded, prompts: list[list[int]], max_new_tokens: int, seed: int | None) -> dict:
    """One batch: generate (left-padded), then one teacher-forced pass for the hidden states."""
    model, pad = target.model, target.tokenizer.eos_token_id
    width = max(map(len, prompts))
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    attn = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    kw = {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
    if seed is not None:
        torch.manual_seed(seed)  # this training process owns its generator; HF samples from it
        kw = {"do_sample": True, "temperature": 0.8, "top_p": 0.95, "top_k": 0}
    seqs = model.generate(ids, attention_mask=attn, max_new_tokens=max_new_tokens, pad_token_id=pad, **kw)
    answer = torch.zeros_like(seqs, dtype=torch.bool)
    answer[:, width:] = True
    mask = torch.cat([attn.bool(), _until_eos(seqs[:, width:], target)], dim=1)
    answer &= mask
    return {"tokens": seqs.int(), "mask": mask, "answer": answer, **_features(target, seqs, mask)}


def fuse_layers(num_layers: int) -> tuple[int, int, int]:
    """EAGLE-3's low, middle and high features: the inputs of layers 2, L/2 and L-3, i.e. these
    indices into Hugging Face's hidden_states tuple (0 = the embeddings). Clamped for tiny test models."""
    return min(2, num_layers), num_layers // 2, max(num_layers - 3, 0)


@torch.inference_mode()
def _features(target: Loaded, seqs: torch.Tensor, mask: torch.Tensor) -> dict:
    """One teacher-forced pass: the final hidden state and the fused low/middle/high features."""
    pos = (torch.cumsum(mask.long(), dim=1) - 1).clamp(min=0)  # left padding must not shift positions
    out = target.model(input_ids=seqs, attention_mask=mask.long(), position_ids=pos, output_hidden_states=True)
    fuse = torch.cat([out.hidden_states[i] for i in fuse_layers(target.model.config.num_hidden_layers)], dim=-1)
    return {"hidden": out.hidden_states[-1].half(), "fuse": fuse.half()}


def _save(tensors: dict, path: Path) -> None:
    tmp = path.with_suffix(".tmp")  # a rename is atomic: a shard on disk is always complete
    save_file(tensors, str(tmp))
    tmp.rename(path)


def _until_eos(new: torch.Tensor, target: Loaded) -> torch.Tensor:
    """True up to and including each row's first end-of-sequence token."""
    from ..models import eos_ids

    eos = torch.zeros_like(new, dtype=torch.bool)
    for e in eos_ids(target.tokenizer, target.model):
        eos |= new == e
    after = torch.cumsum(eos.int(), dim=1) - eos.int()  # eos tokens strictly before each position
    return after == 0


def frequent_tokens(tokens: torch.Tensor, size: int) -> torch.Tensor:
    """The `size` most frequent token ids in `tokens` (negative entries are not tokens),
    most frequent first, ties to the lower id (fewer if fewer distinct tokens occur): the
    vocabulary subset a drafter scores."""
    ids, counts = torch.unique(tokens[tokens >= 0], return_counts=True)
    return ids[torch.argsort(counts, descending=True, stable=True)][:size].long()


def read_manifest(data: Path) -> dict:
    """How the shards in data were made (prompts, samples, seed); {} when there is no manifest."""
    path = Path(data) / "manifest.json"
    return json.loads(path.read_text()) if path.exists() else {}


def published(path: Path) -> str:
    """A local path as a model card shows it: the card is published, so no home folder in it."""
    return str(path).replace(str(Path.home()), "~")


def command_line(argv) -> str:
    """The training command as typed, for the model card."""
    return "python -m paradec.train " + " ".join(sys.argv[1:] if argv is None else argv)


def load_shards(folder: Path) -> list[dict]:
    shards = sorted(folder.glob("shard-*.safetensors"))
    if not shards:
        raise FileNotFoundError(f"no self-distillation data in {folder}: run `python -m paradec.train data` first")
    return [load_file(str(s)) for s in shards]
