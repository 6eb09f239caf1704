"""Small GGUF files for the 4-bit engine's tests: a Hugging Face Llama's weights written as llama.cpp's converter
writes them (q and k rows in its rotary order, the projections Q4_1, the embedding and LM head Q8_0, F32 norms),
by the gguf package's writer and quantizers; and a reader-compatible stand-in for exact_joint."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from gguf import GGMLQuantizationType as Q
from gguf import GGUFWriter
from gguf.quants import quantize

PROJECTIONS = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
               "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}


def _gguf_order(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's converter's permutation of q's and k's rows (the inverse of what the engine undoes)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write(model, path: Path, matrix: Q = Q.Q4_1, head: Q = Q.Q8_0, odd: dict[str, Q] | None = None) -> Path:
    """The model's weights as a GGUF file at path; odd: tensor name -> another type (a file the engine refuses)."""
    cfg, odd = model.config, odd or {}
    w = GGUFWriter(str(path), "llama")
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_freq_base(cfg.rope_parameters["rope_theta"])
    w.add_vocab_size(cfg.vocab_size)
    tensors = {"token_embd.weight": (model.model.embed_tokens.weight, head),
               "output_norm.weight": (model.model.norm.weight, Q.F32)}
    if not cfg.tie_word_embeddings:
        tensors["output.weight"] = (model.lm_head.weight, head)
    for i, layer in enumerate(model.model.layers):
        tensors[f"blk.{i}.attn_norm.weight"] = (layer.input_layernorm.weight, Q.F32)
        tensors[f"blk.{i}.ffn_norm.weight"] = (layer.post_attention_layernorm.weight, Q.F32)
        for module, name in PROJECTIONS.items():
            parent = layer.self_attn if module.endswith(("q_proj", "k_proj", "v_proj", "o_proj")) else layer.mlp
            tensors[f"blk.{i}.{name}.weight"] = (getattr(parent, module).weight, matrix)
    for name, (tensor, kind) in tensors.items():
        data = tensor.detach().float().numpy()
        if name.endswith(("attn_q.weight", "attn_k.weight")):
            heads = cfg.num_attention_heads if "attn_q" in name else cfg.num_key_value_heads
            data = _gguf_order(data, heads)
        kind = odd.get(name, kind)
        w.add_tensor(name, data if kind == Q.F32 else quantize(data, kind), raw_dtype=kind)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


class Logits:
    """A target of paradec's CPU forward (either precision) called as exact_joint calls a Hugging Face model
    (input_ids (B, T) -> .logits (B, T, V)), each row its own forward from an empty cache: by batch invariance, the
    logits a decode sees."""

    def __init__(self, target):
        self.target = target

    def __call__(self, input_ids: torch.Tensor):
        rows = []
        for ids in input_ids.tolist():
            logits, _ = self.target.forward(self.target.new_cache(), ids, torch.arange(len(ids)), None, len(ids))
            rows.append(logits)
        return type("Out", (), {"logits": torch.stack(rows)})()
