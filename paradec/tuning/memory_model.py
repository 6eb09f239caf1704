"""The memory model of the GPU presets (paradec.tuning.presets), split as paradec.bench_memory measures a run:
weights (the target, and the draft or heads the method reads), the KV cache at a context length (the target's
with the verify pass's rows before compaction, a draft model's, an EAGLE head's one layer)
and a verify pass's activations.
Analytic (bf16 weights and caches, float32 logits); every method's tree is sized to the verify budget.

Pure Python: the Roofline page draws it at 4k and 32k tokens of context."""
from __future__ import annotations

from .. import catalog
from .presets import PRESETS, Preset

CONTEXTS = (4096, 32768)
VERIFY = 64  # tokens a GPU verify pass carries: paradec.tuning.presets.verify_budget's cap for large cards
# (layers, hidden, intermediate, vocab) of each preset's target, from its config.json
SHAPES = {"HuggingFaceTB/SmolLM2-1.7B-Instruct": (24, 2048, 8192, 49152),
          "Qwen/Qwen2.5-7B-Instruct": (28, 3584, 18944, 152064), "lmsys/vicuna-7b-v1.3": (32, 4096, 11008, 32000),
          "meta-llama/Llama-3.1-8B-Instruct": (32, 4096, 14336, 128256)}
HEADS_WITH_A_LAYER = ("eagle", "eagle3")  # an EAGLE head is one decoder layer: it caches K and V too


def split(preset: Preset, method: str, context: int) -> dict:
    """Bytes: weights_target, weights_extra, kv, activations, total."""
    target = preset.target
    layers, hidden, inter, vocab = SHAPES[target.repo]
    uses = catalog.METHODS[method].uses  # the preset model (by role) the method reads besides the target
    extra = preset.role(uses)[:1] if uses else []
    rows = 1 if method == "ar" else VERIFY
    kv = target.kv_bytes_per_token * (context + rows)
    kv += sum(m.kv_bytes_per_token * context for m in extra)  # a draft model's own cache
    kv += sum(target.kv_bytes_per_token // layers * context for m in extra if m.role in HEADS_WITH_A_LAYER)
    # the logits in float32, and one layer's transients: q, k, v and o, then the MLP's gate, up and product
    activations = rows * (vocab * 4 + (4 * hidden + 3 * inter) * 2)
    weights = {"weights_target": target.weight_bytes, "weights_extra": sum(m.weight_bytes for m in extra)}
    return {**weights, "kv": kv, "activations": activations, "total": sum(weights.values()) + kv + activations}


def table() -> list[dict]:
    """Every GPU preset's methods (AR first) at each context length, GiB, with the total against AR's."""
    rows = []
    for preset in PRESETS:
        for context in CONTEXTS:
            ar = split(preset, "ar", context)["total"]
            for method in ("ar", *preset.methods):
                s = split(preset, method, context)
                rows.append({"preset": preset.name, "context": context, "method": method,
                             **{k: round(v / 2**30, 3) for k, v in s.items()}, "vs AR": round(s["total"] / ar, 3)})
    return rows
