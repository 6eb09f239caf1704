"""A GGUF file as paradec's 4-bit engine reads it (the `gguf` package's GGUFReader, memory-mapped): the model's
configuration from its metadata, and its tensors as the file stores them, checked before anything is packed.

The engine reads Llama-family files whose matrices are Q4_1 or Q8_0 blocks (the embedded SmolLM2 file: Q4_1 for
every projection, Q8_0 for the tied embedding and LM head) and whose norms are F32; any other type is refused in
one line naming the tensor. llama.cpp's converter stores q and k with each head's rotary halves interleaved;
`matrix(..., heads=)` gives them back in Hugging Face's order (whole rows moved, no block touched), so the 4-bit
forward and the float32 one run the same rotary."""
from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np
import torch

MATRICES = {"Q4_1": 3, "Q8_0": 8}  # name -> ggml type number (the kernel's quant_math.h)
VECTORS = ("F32",)
MAX_FIELD = 2**31  # sizes from a file: a corrupt one must not ask for more than exists


class GGUFError(ValueError):
    """A GGUF file the engine cannot read; the message is one line."""


def _reader_class():
    """The gguf package's GGUFReader, except that an array of strings (the tokenizer's 49,152 tokens and 48,900
    merges) is stepped over, not made into two numpy views a string: the engine never reads them (the tokenizer
    is read by transformers), and the views took 2-4 s and 150 MiB on the embedded file."""
    from gguf import GGUFReader, GGUFValueType

    class Reader(GGUFReader):
        def _get_field_parts(self, orig_offs, raw_type):
            if raw_type != GGUFValueType.ARRAY or self._get(orig_offs, np.uint32)[0] != GGUFValueType.STRING:
                return super()._get_field_parts(orig_offs, raw_type)
            head = self._get(orig_offs, np.uint32), self._get(orig_offs + 4, np.uint64)
            offs, raw = orig_offs + 12, memoryview(self.data)
            for _ in range(int(head[1][0])):
                offs += 8 + int.from_bytes(raw[offs:offs + 8], "little")
            return offs - orig_offs, [*head, self.data[orig_offs + 12:offs]], [], [GGUFValueType.ARRAY,
                                                                                  GGUFValueType.STRING]

    return Reader


class GGUFModel:
    """The file's configuration and tensors; the data stays in the file's memory map until packed."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.reader = _reader_class()(self.path, "c")  # copy-on-write: writable views, nothing copied
        except Exception as e:  # a file from the user: whatever its reader fails with is one line
            raise GGUFError(f"cannot read {self.path.name} as GGUF: {str(e).splitlines()[0][:200]}") from None
        self.tensors = {t.name: t for t in self.reader.tensors}
        self.config = self._config()
        self._check()

    def field(self, key: str, default=None):
        f = self.reader.fields.get(key)
        return default if f is None else f.contents()

    def _config(self):
        from transformers import LlamaConfig

        arch = self.field("general.architecture")
        if arch != "llama":
            raise GGUFError(f"the 4-bit engine reads Llama-family GGUF files; {self.path.name} is {arch!r}")
        if self.field("llama.rope.scaling.type", "none") not in ("none", "linear") or \
                self.field("llama.rope.scaling.factor", 1.0) != 1.0:
            raise GGUFError(f"the 4-bit engine has no rotary scaling; {self.path.name} asks for one")
        get = self._number
        heads, hidden = get("llama.attention.head_count"), get("llama.embedding_length")
        embed = self.tensors.get("token_embd.weight")
        if embed is None:
            raise GGUFError(f"{self.path.name} has no token_embd.weight")
        eos = self.field("tokenizer.ggml.eos_token_id", 2)
        return LlamaConfig(
            vocab_size=int(embed.shape[1]), hidden_size=hidden, intermediate_size=get("llama.feed_forward_length"),
            num_hidden_layers=get("llama.block_count"), num_attention_heads=heads,
            num_key_value_heads=get("llama.attention.head_count_kv", heads),
            head_dim=get("llama.rope.dimension_count", hidden // max(1, heads)),
            max_position_embeddings=get("llama.context_length", 2048),
            rms_norm_eps=float(self.field("llama.attention.layer_norm_rms_epsilon", 1e-6)),
            rope_parameters={"rope_theta": float(self.field("llama.rope.freq_base", 10000.0)), "rope_type": "default"},
            tie_word_embeddings="output.weight" not in self.tensors, hidden_act="silu",
            bos_token_id=self.field("tokenizer.ggml.bos_token_id", 1), eos_token_id=eos,
            pad_token_id=self.field("tokenizer.ggml.padding_token_id", eos),
        )

    def _number(self, key: str, default=None) -> int:
        value = self.field(key, default)
        if not isinstance(value, int) or not 0 < value < MAX_FIELD:
            raise GGUFError(f"{self.path.name}: {key} is {str(value)[:40]}, not a size")
        return value

    def names(self, layer: int) -> dict[str, str]:
        """A decoder layer's tensors, by what the forward calls them."""
        b = f"blk.{layer}."
        return {"q": b + "attn_q.weight", "k": b + "attn_k.weight", "v": b + "attn_v.weight",
                "o": b + "attn_output.weight", "gate": b + "ffn_gate.weight", "up": b + "ffn_up.weight",
                "down": b + "ffn_down.weight", "norm_in": b + "attn_norm.weight", "norm_post": b + "ffn_norm.weight"}

    def _check(self) -> None:
        """Every tensor the forward reads is there, of a type it reads, with the configuration's shape."""
        cfg, head = self.config, "output.weight" if "output.weight" in self.tensors else "token_embd.weight"
        matrices, vectors = ["token_embd.weight", head], ["output_norm.weight"]
        for i in range(cfg.num_hidden_layers):
            n = self.names(i)
            matrices += [n[k] for k in ("q", "k", "v", "o", "gate", "up", "down")]
            vectors += [n["norm_in"], n["norm_post"]]
        for name in matrices + vectors:
            t = self.tensors.get(name)
            if t is None:
                raise GGUFError(f"{self.path.name} has no {name}")
            kind, matrix = t.tensor_type.name, name in matrices
            allowed = MATRICES if matrix else VECTORS
            if kind not in allowed:
                raise GGUFError(f"the 4-bit engine reads {', '.join(allowed)} {'matrices' if matrix else 'norms'}; "
                                f"{self.path.name}'s {name} is {kind}")
            if name in matrices and int(t.shape[0]) % 32:
                raise GGUFError(f"{self.path.name}'s {name} has rows of {int(t.shape[0])}, not blocks of 32")

    def matrix(self, name: str, heads: int | None = None) -> tuple[int, int, np.ndarray]:
        """(ggml type, K, rows (N, K / 32 blocks' bytes) uint8) as the file stores them; heads: q's or k's head
        count, whose rows come back in Hugging Face's rotary order (a copy; otherwise the file's memory map)."""
        t = self.tensors[name]
        rows = np.asarray(t.data).reshape(int(t.shape[1]), -1)
        if heads:
            dim = rows.shape[0] // heads // 2
            order = np.arange(rows.shape[0]).reshape(heads, dim, 2).swapaxes(1, 2).reshape(-1)
            rows = rows[order]
        return MATRICES[t.tensor_type.name], int(t.shape[0]), rows

    def release(self, *names: str) -> None:
        """Tensors packed already: their pages of the file's mapping are dropped (a private mapping's clean pages,
        read again from the file if touched), so that loading never holds the file beside its packed copy (the
        load's peak resident memory: 591 -> 502 MiB, torch and transformers imported)."""
        mapped = getattr(self.reader.data, "_mmap", None)
        if mapped is None or not hasattr(mapped, "madvise") or not hasattr(mmap, "MADV_DONTNEED"):
            return
        for name in names:
            t = self.tensors[name]
            start = (int(t.data_offset) // mmap.PAGESIZE + 1) * mmap.PAGESIZE  # whole pages inside the tensor only
            end = (int(t.data_offset) + int(t.n_bytes)) // mmap.PAGESIZE * mmap.PAGESIZE
            if end > start:
                mapped.madvise(mmap.MADV_DONTNEED, start, end - start)

    def vector(self, name: str) -> torch.Tensor:
        return torch.from_numpy(np.array(self.tensors[name].data, dtype=np.float32).reshape(-1))
