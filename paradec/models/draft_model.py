"""The trained draft model for sps: a few Llama decoder layers of the target's width that
read the target's embeddings and score a vocabulary subset with the target's LM head rows.

Only the draft's own weights are stored (its layers, final norm and subset ids, float16):
the embeddings and LM head are the target's, shared at load time, never copied into the
file and never modified. The modeling code is Hugging Face's own LlamaForCausalLM.

Cost on a CPU (embedded model, one thread): one draft token through one layer is ~1.7 ms,
the subset head (V' = 4096) ~0.2 ms, the full head ~10 ms; one target forward ~60 ms."""
from __future__ import annotations

import copy
from pathlib import Path

import torch
from transformers.modeling_outputs import CausalLMOutputWithPast

from ..drafters.subset import VocabSubset, read_weights, save_weights

ASSET = Path(__file__).resolve().parents[2] / "assets" / "drafters" / "sps-smollm2"
WEIGHTS = "model.safetensors"
STOP = "stop.json"  # the learned draft-length rule fitted on this draft (paradec.train.stop), when there is one


class SubsetDraft(torch.nn.Module):
    """Called like a Hugging Face causal LM (input_ids, cache, logits_to_keep) and returning
    full-vocabulary logits, -inf outside the subset: the sps drafter needs no second path,
    and q is zero where the draft never proposes, which keeps rejection sampling exact."""

    def __init__(self, full, subset: VocabSubset):
        super().__init__()
        # The same layers with the target's full LM head: a plain Hugging Face model, what
        # Hugging Face's assisted generation takes as its assistant.
        self.full = full
        self.subset = subset
        self.register_buffer("head", subset.head(full.lm_head.weight), persistent=False)  # (V', H)

    @property
    def config(self):
        return self.full.config

    @property
    def device(self):
        return self.full.device

    def subset_logits(self, input_ids, logits_to_keep: int = 0, **kw) -> torch.Tensor:
        """(B, T, V') logits over the subset only (what training fits)."""
        hidden = self.full.model(input_ids=input_ids, **kw).last_hidden_state
        hidden = hidden[:, -logits_to_keep:] if logits_to_keep else hidden
        return hidden @ self.head.T

    def forward(self, input_ids, logits_to_keep: int = 0, **kw) -> CausalLMOutputWithPast:
        logits = self.subset_logits(input_ids, logits_to_keep, **kw)
        return CausalLMOutputWithPast(logits=self.subset.expand(logits))


def build(target_model, layers: int, subset_ids: torch.Tensor, state: dict | None = None) -> SubsetDraft:
    """A draft of `layers` decoder layers on the target's config. Its layers and final norm
    come from `state`, or (to start training) from the target's first layers and final norm."""
    total = target_model.config.num_hidden_layers
    if not 1 <= layers < total:
        raise ValueError(f"a draft has 1 to {total - 1} layers (the target has {total}), not {layers}")
    cfg = copy.deepcopy(target_model.config)
    cfg.num_hidden_layers = layers
    if getattr(cfg, "layer_types", None):
        cfg.layer_types = cfg.layer_types[:layers]
    full = type(target_model)(cfg).to(target_model.dtype)
    own = own_keys(full)
    state = state if state is not None else {k: v for k, v in target_model.state_dict().items() if k in own}
    missing = own - set(state)
    if missing:
        raise ValueError(f"draft weights lack {sorted(missing)[0]} (and {len(missing) - 1} more)")
    full.load_state_dict({k: state[k].to(target_model.dtype) for k in own}, strict=False)
    # The target's embeddings and LM head, shared (no copy) and frozen: new Parameter
    # objects over the same storage, so the target's own parameters stay untouched.
    full.model.embed_tokens.weight = _frozen(target_model.get_input_embeddings().weight)
    full.lm_head.weight = _frozen(target_model.get_output_embeddings().weight)
    full.to(target_model.device)
    subset = VocabSubset(subset_ids.to(target_model.device), target_model.config.vocab_size)
    return SubsetDraft(full, subset).eval()


def _frozen(weight: torch.Tensor) -> torch.nn.Parameter:
    return torch.nn.Parameter(weight.detach(), requires_grad=False)


def own_keys(full) -> set[str]:
    """The draft's own weights: decoder layers and final norm (not embeddings, not LM head)."""
    return {k for k in full.state_dict() if k.startswith(("model.layers.", "model.norm."))}


def save(draft: SubsetDraft, folder: Path, metadata: dict) -> Path:
    """Write the draft's own weights (float16: half the size, no measurable loss of
    acceptance) and its subset ids to folder/model.safetensors."""
    own = own_keys(draft.full)
    tensors = {k: v for k, v in draft.full.state_dict().items() if k in own}
    return save_weights(Path(folder) / WEIGHTS, tensors, draft.subset.ids,
                        {"layers": draft.config.num_hidden_layers, **metadata})


def fast_draft(view, folder: Path = ASSET):
    """The trained draft in folder as paradec's CPU forward over a target view (paradec.cpu.view: the 4-bit
    target's): its own layers and final norm in float32, the target's embedding lookup and its LM-head rows for
    the subset. No Hugging Face model of the draft is built, so no float32 copy of the target's weights either."""
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRMSNorm, LlamaRotaryEmbedding

    from ..cpu import kernels
    from ..cpu.fast import FastTarget, Layer

    meta, state, ids = read_weights(Path(folder) / WEIGHTS, "trained draft", "python -m paradec.train draft")
    cfg = copy.deepcopy(view.config)
    cfg.num_hidden_layers = int(meta["layers"])
    if state["model.norm.weight"].shape[0] != cfg.hidden_size:
        raise ValueError(f"the draft at {folder} is {state['model.norm.weight'].shape[0]} wide, the target "
                         f"{cfg.hidden_size}")
    norm = LlamaRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
    norm.load_state_dict({"weight": state["model.norm.weight"].float()})
    kernel, layers = kernels.kernel(), []
    for i in range(cfg.num_hidden_layers):
        layer = LlamaDecoderLayer(cfg, layer_idx=i)
        prefix = f"model.layers.{i}."
        layer.load_state_dict({k[len(prefix):]: v.float() for k, v in state.items() if k.startswith(prefix)})
        layers.append(Layer(layer.eval(), kernel))
    subset = VocabSubset(ids, cfg.vocab_size)
    fast = object.__new__(FastTarget)
    fast.assemble(cfg, kernel, view.embed, LlamaRotaryEmbedding(cfg).eval(), norm.eval(), layers,
                  view.head(subset.ids), subset.expand)
    if (Path(folder) / STOP).is_file():
        fast.stop_file = Path(folder) / STOP  # what sps's draft_length=learned reads
    return fast


def load(target_model, folder: Path = ASSET) -> SubsetDraft:
    """The trained draft stored in folder, on the target's device and dtype."""
    meta, state, ids = read_weights(Path(folder) / WEIGHTS, "trained draft", "python -m paradec.train draft")
    layers = int(meta["layers"])
    hidden = state["model.norm.weight"].shape[0]
    if hidden != target_model.config.hidden_size:
        raise ValueError(f"the draft at {folder} is {hidden} wide, the target {target_model.config.hidden_size}")
    draft = build(target_model, layers, ids, state)
    if (Path(folder) / STOP).is_file():
        draft.stop_file = Path(folder) / STOP  # what sps's draft_length=learned reads
    return draft
