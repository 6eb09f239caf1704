"""A lean forward pass of a Llama-family target on the CPU, for the few tokens a decode step feeds.

The same math as Hugging Face's LlamaForCausalLM, float32, the shared model's own weights and rotary
embedding, but:
- the q/k/v and gate/up projections fused, every weight packed once at load for paradec's small-row
  kernel (paradec.cpu.kernels; torch's matrix product when that kernel cannot be built here);
- the rest of a layer in the same extension, one call a step: norm, rotary and cache write, attention,
  SiLU-gate, the residual adds inside the products (paradec.cpu.layer_ops; torch's operations without it);
- a KV cache preallocated per run and written by position (gpt-fast's design), compacted in place;
- a boolean attention mask only where one is needed (a tree, a window), none for a chain or a token.

AR and every method's verify pass run through it (paradec.core.engine), so the speedups compare one forward
with itself. Its logits differ from Hugging Face's by ~1e-6 (another summation order); Hugging Face's
`generate`, the bench peer, stays the plain model. The shared model is only read: the packed copies are
this object's, built once per loaded target and shared read-only by every run."""
from __future__ import annotations

import torch
from torch.nn import functional as F

from . import kernels
from .batch import forward_many as one_pass_for_many
from .layer_ops import KernelOps, TorchOps


class Linear:
    """y = x W^T (+ b) (+ residual) for x (M, K): W packed for the kernel, or as is for torch's fallback."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, kernel):
        self.n, self.kernel, self.bias = weight.shape[0], kernel, bias
        if kernel is None:
            self.weight = weight.contiguous()
        else:  # float16 panels where that loses nothing (a head saved in float16): half the bytes, the same bits
            half = kernel.half_weights() and torch.equal(weight.half().float(), weight)
            self.weight = kernel.pack(weight, half)

    def __call__(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        if self.kernel is not None:
            return self.kernel.linear(x, self.weight, self.n, self.bias, residual)
        y = F.linear(x, self.weight, self.bias)
        return y if residual is None else residual + y


class PackedLinear(torch.nn.Module):
    """An nn.Linear whose products run on the kernel (it also beats torch's for a prompt's hundreds of rows
    here: 512 rows 538 ms against 662 for the 30 layers); with autograd on (training), torch's. For modules
    a drafter owns (its own copy of a head), never a shared model."""

    def __init__(self, linear: torch.nn.Linear, kernel):
        super().__init__()
        self.weight, self.bias = linear.weight, linear.bias
        self.packed = Linear(linear.weight.detach(), _bias(linear), kernel)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled():
            return F.linear(x, self.weight, self.bias)
        return self.packed(x.reshape(-1, x.shape[-1]).contiguous()).reshape(*x.shape[:-1], -1)


def pack_linears(module: torch.nn.Module) -> torch.nn.Module:
    """Every nn.Linear inside `module` (which the caller owns) becomes a PackedLinear, in place; a no-op
    where the kernel cannot be built or the module is not float32 on the CPU."""
    kernel = kernels.kernel()
    p = next(module.parameters(), None)
    if kernel is None or p is None or p.device.type != "cpu" or p.dtype != torch.float32:
        return module
    for name, child in list(module.named_children()):
        if isinstance(child, torch.nn.Linear):
            setattr(module, name, PackedLinear(child, kernel))
        else:
            pack_linears(child)
    return module


def rows_product(rows: torch.Tensor):
    """x -> x rows^T on the kernel (an LM head's rows a drafter scores with), or None where it cannot run."""
    kernel = kernels.kernel()
    if kernel is None or rows.device.type != "cpu" or rows.dtype != torch.float32:
        return None
    linear = Linear(rows.detach(), None, kernel)
    return lambda x: linear(x.reshape(-1, x.shape[-1]).contiguous()).reshape(*x.shape[:-1], -1)


def _fused(*linears) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Several projections of one input as one weight (their outputs side by side) and bias."""
    weight = torch.cat([m.weight.detach() for m in linears])
    bias = None if linears[0].bias is None else torch.cat([m.bias.detach() for m in linears])
    return weight, bias


class Layer:
    """One decoder layer's packed projections and its norms (the model's modules: their weights and eps)."""

    def __init__(self, layer, kernel):
        a, m = layer.self_attn, layer.mlp
        self.qkv = Linear(*_fused(a.q_proj, a.k_proj, a.v_proj), kernel)
        self.o = Linear(a.o_proj.weight.detach(), _bias(a.o_proj), kernel)
        self.gate_up = Linear(*_fused(m.gate_proj, m.up_proj), kernel)
        self.down = Linear(m.down_proj.weight.detach(), _bias(m.down_proj), kernel)
        self.norm_in, self.norm_post = layer.input_layernorm, layer.post_attention_layernorm


def _bias(linear) -> torch.Tensor | None:
    return None if linear.bias is None else linear.bias.detach()


class Cache:
    """One run's keys and values, (layers, batch, kv_heads, capacity, head_dim) each, written by position.
    Committed tokens are stored in order (the verifier compacts the accepted path), so entry i is position i;
    a batch (paradec.train.generate) shares the entries' count, its rows left-padded."""

    def __init__(self, layers: int, kv_heads: int, head_dim: int, capacity: int = 512, batch: int = 1):
        self.k = torch.empty(layers, batch, kv_heads, capacity, head_dim)
        self.v = torch.empty_like(self.k)
        self.length = 0

    def get_seq_length(self) -> int:
        return self.length

    def crop(self, n: int) -> None:
        """Hugging Face's crop: n >= 0 keeps the first n entries, n < 0 drops the last -n."""
        self.length = n if n >= 0 else self.length + n

    def reserve(self, n: int) -> None:
        """Room for n more entries: the capacity doubles when full (a copy, amortised over the run)."""
        if self.length + n > self.k.shape[3]:
            grow = max(self.length + n, 2 * self.k.shape[3]) - self.k.shape[3]
            pad = (0, 0, 0, grow)
            self.k, self.v = F.pad(self.k, pad), F.pad(self.v, pad)

    def keep(self, prefix: int, rows: list[int]) -> None:
        """After a verify pass: entries prefix + rows (ascending) move down to prefix, prefix+1, ...;
        what follows is dropped. rows = 0..n-1 (a chain's accepted prefix) needs no copy."""
        if rows != list(range(len(rows))):
            idx = torch.tensor(rows) + prefix
            end = prefix + len(rows)
            self.k[:, :, :, prefix:end] = self.k.index_select(3, idx)  # index_select copies first: no overlap
            self.v[:, :, :, prefix:end] = self.v.index_select(3, idx)
        self.length = prefix + len(rows)


class FastTarget:
    """Built from a loaded Llama-family model on the CPU in float32 (supports() says which)."""

    def __init__(self, model, use_kernel: bool = True, head: torch.Tensor | None = None, expand=None):
        """use_kernel=False: torch's matrix products on the fused weights (the fallback where the kernel
        cannot be built; also what the tests compare the kernel with). head, expand: a draft's own LM-head
        rows (V', H) and the map of its logits to the whole vocabulary (paradec.models.draft_model's subset)."""
        kernel = kernels.kernel() if use_kernel else None
        base = model.model
        lm_head = Linear(model.lm_head.weight.detach() if head is None else head.detach(),
                         _bias(model.lm_head) if head is None else None, kernel)
        self.assemble(model.config, kernel, base.embed_tokens, base.rotary_emb, base.norm,
                      [Layer(layer, kernel) for layer in base.layers], lm_head, expand)
        self.model = model  # the shared model: read, never changed

    def assemble(self, config, kernel, embed, rotary, norm, layers: list, lm_head, expand=None) -> None:
        """A forward from its parts, whoever made them (a Hugging Face model here, a GGUF file in
        paradec.cpu.quant): embed(ids) -> (..., H), the model's rotary module and final norm, layers with
        qkv, o, gate_up and down products and their two norms, lm_head(x (R, H)) -> (R, V')."""
        self.config, self.kernel = config, kernel
        self.ops = TorchOps() if kernel is None else KernelOps(kernel)
        self.embed, self.rotary, self.norm, self.layers, self.lm_head = embed, rotary, norm, layers, lm_head
        self.expand = expand
        self.stop_file = None  # of_draft: a trained draft's learned draft-length rule
        self.heads, self.kv_heads = config.num_attention_heads, config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        self.scaling = self.head_dim ** -0.5  # Llama's attention scaling

    @classmethod
    def of_draft(cls, draft) -> FastTarget:
        """paradec.models.draft_model's trained draft: its layers, and its LM-head rows over a vocabulary subset."""
        fast = cls(draft.full, head=draft.head, expand=draft.subset.expand)
        fast.stop_file = getattr(draft, "stop_file", None)  # the learned draft-length rule fitted on it
        return fast

    @staticmethod
    def supports(model, device: str, dtype: str) -> str:
        """"" when this target can run here, else why not (one line)."""
        if device != "cpu" or dtype != "float32":
            return f"the fast path runs on the CPU in float32, not {device} {dtype}"
        if type(model).__name__ != "LlamaForCausalLM":
            return f"the fast path runs Llama-family models, not {type(model).__name__}"
        if model.config.hidden_act != "silu":
            return f"the fast path's MLP is SiLU-gated, not {model.config.hidden_act}"
        if getattr(model.config, "sliding_window", None) or getattr(model.config, "layer_types", None) and any(
                t != "full_attention" for t in model.config.layer_types):
            return "the fast path has no sliding window"
        return ""

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    @property
    def dtype(self) -> torch.dtype:
        return torch.float32

    def new_cache(self, batch: int = 1, layers: int | None = None) -> Cache:
        return Cache(layers or len(self.layers), self.kv_heads, self.head_dim, batch=batch)

    def forward(self, cache: Cache, ids: list[int], positions: torch.Tensor, allowed: torch.Tensor | None,
                keep: int, hidden_layers: tuple[int, ...] = ()):
        """ids (M,) at position ids `positions` (M,) after the cache's entries; allowed (M, cached + M) bool,
        True where a query may attend (None: all cached entries and the new tokens causally). Returns the
        logits of the last `keep` rows (keep, V) and the hidden states asked for, indexed as Hugging
        Face's hidden_states ((0 = the embeddings, -1 = the final, normed layer): (layers, M, H))."""
        logits, hidden = self.forward_batch(cache, torch.tensor([ids]), positions[None],
                                            None if allowed is None else allowed[None], keep, hidden_layers)
        return logits[0], None if hidden is None else hidden[:, 0]

    def forward_many(self, passes, hidden_layers: tuple[int, ...] = ()):
        """forward() for several sequences, each on its own cache, in one pass: [(cache, ids, positions, allowed,
        keep)] -> [(logits, hidden)], what forward() returns for each (paradec.cpu.batch)."""
        return one_pass_for_many(self, passes, hidden_layers)

    @torch.inference_mode()
    def hidden(self, cache: Cache, ids: list[int], layers: int) -> torch.Tensor:
        """The residual stream (M, H) of ids after the first `layers` layers, before any norm, written after the
        cache's entries (a cache of those layers: new_cache(layers)). Early exit's draft runs this."""
        start, m = cache.length, len(ids)
        cache.reserve(m)
        positions = torch.arange(start, start + m)[None]
        h = self.embed(torch.tensor([ids]))
        cos, sin = self.rotary(h, positions)
        h = h.view(m, -1)
        for i, layer in enumerate(self.layers[:layers]):
            h = self._layer(i, layer, h, cos, sin, None, cache, start)
        cache.length = start + m
        return h

    @torch.inference_mode()
    def forward_batch(self, cache: Cache, ids: torch.Tensor, positions: torch.Tensor, allowed: torch.Tensor | None,
                      keep: int, hidden_layers: tuple[int, ...] = ()):
        """forward() for B sequences side by side: ids and positions (B, M), allowed (B, M, cached + M).
        -> logits (B, keep, V) and hidden states (layers, B, M, H)."""
        b, m = ids.shape
        start = cache.length
        cache.reserve(m)
        h = self.embed(ids)
        cos, sin = self.rotary(h, positions)  # (B, M, head_dim), the model's own rotary
        h = h.view(b * m, -1)  # the residual stream, a row per token
        states = [h]
        for i, layer in enumerate(self.layers):
            h = self._layer(i, layer, h, cos, sin, allowed, cache, start)
            states.append(h)
        h = self.ops.rmsnorm(h, self.norm)
        states[-1] = h
        logits = self.lm_head(h.view(b, m, -1)[:, m - keep:].reshape(b * keep, -1)).view(b, keep, -1)
        logits = logits if self.expand is None else self.expand(logits)
        cache.length = start + m
        hidden = torch.stack([states[i] for i in hidden_layers]).view(-1, b, m, h.shape[-1]) if hidden_layers else None
        return logits, hidden

    def _layer(self, i: int, layer: Layer, h, cos, sin, allowed, cache: Cache, start: int) -> torch.Tensor:
        """h (B*M, H) -> the layer's output (B*M, H); its keys and values written into the cache at start."""
        ops, kc, vc = self.ops, cache.k[i], cache.v[i]
        q = ops.rope_qkv(layer.qkv(ops.rmsnorm(h, layer.norm_in)), cos, sin, kc, vc, start, self.heads, self.kv_heads)
        out = ops.attention(q, kc, vc, start + cos.shape[1], allowed, self.scaling)  # (B, M, heads, head_dim)
        h = layer.o(out.view(h.shape[0], -1), residual=h)
        return layer.down(ops.silu_mul(layer.gate_up(ops.rmsnorm(h, layer.norm_post))), residual=h)
