"""Medusa heads (Cai et al., 2024): K extra decoding heads on the target's last hidden state.

Head k is a stack of residual blocks, h + SiLU(W h + b), feeding an LM head; on the hidden
state of position t it predicts the token at t + 1 + k (the target's own LM head predicts
t + 1). Two files load:

- paradec's own (`model.safetensors`, what `python -m paradec.train medusa` writes): the
  blocks only, in the official key layout, plus `vocab_ids`: the heads share the target's
  LM head, restricted to a vocabulary subset (see subset.py) because on a CPU scoring the
  whole vocabulary K times per step would cost most of a target forward. The metadata holds
  the number of heads and layers, the default tree and the target the heads were trained on.
- the official FasterDecoding/Medusa format (`medusa_lm_head.safetensors` or `.pt`: the
  state dict of `medusa_head`, keys `{i}.{j}.linear.weight|bias` for block j of head i and
  `{i}.{layers}.weight` for head i's own full-vocabulary LM head)."""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from ..traces import files

OFFICIAL_FILES = ("medusa_lm_head.safetensors", "medusa_lm_head.pt")
OURS = "model.safetensors"


class ResBlock(torch.nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.linear = torch.nn.Linear(hidden, hidden)
        torch.nn.init.zeros_(self.linear.weight)  # as Medusa: a head starts as the target's own next-token head

    def forward(self, x):
        return x + torch.nn.functional.silu(self.linear(x))


class MedusaHeads(torch.nn.Module):
    """`heads` is a ModuleList laid out like the official `medusa_head`, so its state dict
    reads and writes the official keys. Without own LM heads (`vocab=0`) the target's LM
    head is used, restricted to `vocab_ids` when given."""

    def __init__(self, hidden: int, num_heads: int = 4, layers: int = 1, vocab: int = 0,
                 vocab_ids: torch.Tensor | None = None, tree: list | None = None, target: str = ""):
        super().__init__()
        lm = lambda: [torch.nn.Linear(hidden, vocab, bias=False)] if vocab else []
        self.heads = torch.nn.ModuleList(
            torch.nn.Sequential(*[ResBlock(hidden) for _ in range(layers)], *lm()) for _ in range(num_heads))
        self.num_heads, self.layers, self.own_lm_heads = num_heads, layers, bool(vocab)
        self.vocab_ids = vocab_ids
        self.tree = tree  # default medusa_choices for these heads (None: the drafter's default)
        self.target = target

    def features(self, h: torch.Tensor, n: int | None = None) -> torch.Tensor:
        """(..., H) hidden states -> (n, ..., H): the first n heads' residual blocks applied."""
        return torch.stack([head[: self.layers](h) for head in self.heads[:n]])

    def logits(self, h: torch.Tensor, lm_head: torch.Tensor | None, n: int | None = None) -> torch.Tensor:
        """(..., H) -> (n, ..., V or V') for the first n heads (all by default): with own LM
        heads the full vocabulary, otherwise the shared `lm_head` rows given (the subset's, or all), or the
        product with them (a callable: paradec.cpu.fast's kernel)."""
        if self.own_lm_heads:
            return torch.stack([head(h) for head in self.heads[:n]])
        f = self.features(h, n)
        return lm_head(f) if callable(lm_head) else f @ lm_head.T


def save(heads: MedusaHeads, path: Path) -> None:
    state = {k: v.detach().contiguous() for k, v in heads.heads.state_dict().items()}
    if heads.vocab_ids is not None:
        state["vocab_ids"] = heads.vocab_ids.int()
    meta = {"format": "paradec-medusa", "heads": str(heads.num_heads), "layers": str(heads.layers),
            "tree": json.dumps(heads.tree), "target": heads.target}
    with files.replacing(path) as tmp:  # whole or not at all, and through a link to its target
        save_file(state, str(tmp), metadata=meta)


def load(spec: str | Path) -> MedusaHeads:
    """Heads from a folder or file, paradec's own format or the official one, or from a
    Hugging Face repo id of official heads (e.g. FasterDecoding/medusa-vicuna-7b-v1.3)."""
    path = Path(spec).expanduser()
    if not path.exists() and re.fullmatch(r"[\w.-]+/[\w.-]+", str(spec)):
        path = _download(str(spec))
    mtime = path.stat().st_mtime if path.exists() else None
    return _load_cached(str(path), mtime)


@lru_cache(maxsize=4)  # bench runs many prompts: read a checkpoint once (keyed by its mtime)
def _load_cached(path: str, mtime: float | None) -> MedusaHeads:
    file = _find(Path(path))
    meta, state = _read(file)
    if meta.get("format") == "paradec-medusa":
        ids = state.pop("vocab_ids", None)
        tree = json.loads(meta.get("tree") or "null")
        return _build(state, int(meta["heads"]), int(meta["layers"]), ids, tree, meta.get("target", ""))
    heads = {k.split(".")[0] for k in state}
    layers = sum(k.startswith("0.") and k.endswith(".linear.weight") for k in state)
    return _build(state, len(heads), layers, None, None, "")


def _build(state, num_heads, layers, ids, tree, target) -> MedusaHeads:
    w = state["0.0.linear.weight"]
    own = state.get(f"0.{layers}.weight")
    heads = MedusaHeads(w.shape[1], num_heads, layers, own.shape[0] if own is not None else 0, ids, tree, target)
    try:
        heads.heads.load_state_dict({k: v.float() for k, v in state.items()})
    except RuntimeError as e:
        raise ValueError(f"not a Medusa head checkpoint: {str(e).splitlines()[0]}") from None
    return heads.eval()


def _download(repo: str) -> Path:
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo, allow_patterns=[OURS, *OFFICIAL_FILES]))
    except Exception as e:  # offline, unknown repo, no access: one line for the user
        raise ValueError(f"cannot fetch Medusa heads {repo!r}: {str(e).strip().splitlines()[0][:200]}") from None


def _find(path: Path) -> Path:
    if path.is_file():
        return path
    for name in (OURS, *OFFICIAL_FILES):
        if (path / name).is_file():
            return path / name
    raise ValueError(f"no Medusa heads at {path} (expected {OURS} or {' / '.join(OFFICIAL_FILES)})")


def _read(file: Path) -> tuple[dict, dict]:
    """(metadata, tensors); .pt files load with weights_only=True (no arbitrary unpickling)."""
    if file.suffix == ".pt":
        meta, state = {}, torch.load(file, map_location="cpu", weights_only=True)
    else:
        with safe_open(str(file), framework="pt") as f:
            meta, state = f.metadata() or {}, {k: f.get_tensor(k) for k in f.keys()}
    return meta, {k.removeprefix("medusa_head."): v for k, v in state.items()}  # saved from the wrapper
