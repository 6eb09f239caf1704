"""The one verifier: a single target forward over every drafted node, then acceptance.

Shapes: U = tokens not yet in the KV cache (the whole prompt on the first step, then 1:
the pending token), N = drafted nodes, C = tokens already cached, V = vocabulary.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from . import tree
from .drafters.base import Draft, Verified
from .sampling import Sampler, one_hot, pad_to, residual, top_list
from .trace import Node


def tree_attention_mask(
    parents: list[int], cached: int, uncached: int, dtype: torch.dtype, window_sees: list[list[int]] = (),
    positions: torch.Tensor | None = None, sliding_window: int | None = None,
) -> torch.Tensor:
    """Float mask (1, 1, U+N+W, C+U+N+W): 0 where a query may attend, the dtype's minimum elsewhere.
    Context tokens attend causally; a node attends to all context and its own ancestors;
    a window token to all context and the block tokens it lists. With a sliding window
    (Mistral, Gemma-2/3, Qwen2's windowed layers), a query at position i also never sees a key at a
    position j <= i - sliding_window: the rule the model's own mask applies, which a 4D mask replaces.
    positions: the queries' position ids (U+N+W,); the cached keys sit at positions 0..C-1."""
    n, u = len(parents) + len(window_sees), uncached
    allowed = torch.ones(u + n, cached + u + n, dtype=torch.bool).tril(cached)  # causal part
    block = torch.tensor(tree.mask_rows(parents, window_sees), dtype=torch.bool)  # row 0 = pending
    allowed[u - 1 :, cached + u - 1 :] = block
    if sliding_window is not None:
        queries = positions.cpu()
        keys = torch.cat([torch.arange(cached), queries])
        allowed &= (queries[:, None] - keys[None, :]) < sliding_window
    mask = torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)
    return mask[None, None]


def _masks(model, draft: Draft, cached: int, uncached: int, positions: torch.Tensor):
    """What the verify pass hands the model as attention_mask: None for a chain (its tree mask is the
    causal mask, which the model builds faster, sliding window included); otherwise the tree mask, or
    for a model that mixes full and sliding-window layers one mask per layer type (the dict that
    Hugging Face's Gemma-2/3 and Qwen2 take)."""
    if not draft.window and tree.is_chain(draft.parents):
        return None
    cfg = model.config
    window = getattr(cfg, "sliding_window", None)
    kinds = set(getattr(cfg, "layer_types", None) or ())

    def build(sliding):
        return tree_attention_mask(draft.parents, cached, uncached, model.dtype, draft.window_sees, positions,
                                   sliding).to(model.device)

    if window is None or (kinds and "sliding_attention" not in kinds):
        return build(None)
    if kinds - {"sliding_attention"}:  # mixed layers: each kind gets its own rule
        return {"full_attention": build(None), "sliding_attention": build(window)}
    return build(window)  # every layer slides (Mistral)


def target_forward(model, cache, uncached: list[int], draft: Draft, hidden_layers: tuple[int, ...] = ()) -> Verified:
    """Run the target over uncached context + draft nodes + window in ONE pass -> logits (1+N+W, V)
    and, for the hidden_layers asked for, hidden states (layers, 1+N+W, H).

    Row 0 is the distribution after the pending token; row i+1 the one after node i; then
    the window's rows. Position ids are cache length + depth, so siblings share a position."""
    cached = cache.get_seq_length()
    device = model.device
    ids = torch.tensor([uncached + draft.tokens + draft.window], device=device)
    offsets = [len(uncached) - 1 + d for d in tree.depths(draft.parents) + draft.window_pos]
    pos = torch.tensor([list(range(len(uncached))) + offsets]) + cached
    mask = _masks(model, draft, cached, len(uncached), pos[0])
    keep = 1 + len(draft.tokens) + len(draft.window)  # logits of the pending token onwards
    out = model(input_ids=ids, position_ids=pos.to(device), attention_mask=mask, cache=cache, use_cache=True,
                logits_to_keep=keep, output_hidden_states=bool(hidden_layers))
    if not hidden_layers:
        return Verified(out.logits[0].float())
    states = torch.stack([out.hidden_states[i][0] for i in hidden_layers])  # (layers, U+N+W, H)
    prefix = states[:, :-keep] if states.shape[1] > keep else None
    return Verified(out.logits[0].float(), states[:, -keep:], prefix)


def compact(cache, prefix: int, keep: list[int]) -> None:
    """Keep the first `prefix` cache entries plus entries prefix+i for i in keep; drop the rest.

    After a verify pass the cache holds every drafted node; only the accepted path stays."""
    if keep == list(range(len(keep))):  # accepted a prefix of the draft: a crop is enough
        extra = cache.get_seq_length() - prefix - len(keep)
        if extra:
            cache.crop(-extra)
        return
    for layer in cache.layers:
        idx = torch.tensor(keep, device=layer.keys.device) + prefix
        layer.keys = torch.cat([layer.keys[..., :prefix, :], layer.keys.index_select(-2, idx)], dim=-2)
        layer.values = torch.cat([layer.values[..., :prefix, :], layer.values.index_select(-2, idx)], dim=-2)


@dataclass
class Outcome:
    path: list[int] = field(default_factory=list)  # accepted node indices, root first
    nodes: list[Node] = field(default_factory=list)
    last: int = 0  # the token the target adds after the path
    last_origin: str = "target"  # bonus | resampled | target
    last_p_top: list = field(default_factory=list)
    residual_top: list | None = None


def accept(draft: Draft, logits: torch.Tensor, sampler: Sampler, gen) -> Outcome:
    """Walk from the pending token, keep the longest path the target agrees with, add one token.

    Greedy: a child is accepted when it is the target's argmax. Sampling: each child in turn
    is accepted with probability min(1, p/q); on rejection p becomes norm(max(0, p - q)) and
    the next sibling is tried (a chain has one child per node: plain speculative sampling).
    A deterministic proposal has a one-hot q, so it is accepted with probability p(token)."""
    depth = tree.depths(draft.parents)
    nodes = [Node(token=t, parent=par, depth=d) for t, par, d in zip(draft.tokens, draft.parents, depth)]
    out = Outcome(nodes=nodes)
    if draft.typical and not sampler.greedy:  # at temperature 0 typical acceptance is greedy
        return _accept_typical(draft, logits, sampler, gen, out)
    kids = tree.children(draft.parents)
    cur = -1
    while True:
        p = sampler.probs(logits[cur + 1])
        p_top = first_top = top_list(p)
        rejected, chosen = False, None
        for c in kids[cur]:
            node, q = nodes[c], draft.q[c] if draft.q else None
            q = one_hot(node.token, p) if q is None else pad_to(q, p)
            node.p, node.p_top = round(float(p[node.token]), 6), p_top
            node.q, node.q_top = round(float(q[node.token]), 6), top_list(q)
            if sampler.greedy:
                ok = node.token == int(torch.argmax(p))
            else:
                node.accept_prob = min(1.0, float(p[node.token]) / max(float(q[node.token]), 1e-30))
                node.u = float(torch.rand((), generator=gen))
                ok = node.u < node.accept_prob
            node.status = "accepted" if ok else "rejected"
            if ok:
                chosen = c
                break
            rejected = True
            if not sampler.greedy:  # the next sibling is tested against what is left of p
                p = residual(p, q)
                p_top = top_list(p)
        if chosen is None:
            out.last = sampler.pick(p, gen)
            out.last_origin = "resampled" if rejected else ("bonus" if out.path else "target")
            out.last_p_top = first_top
            out.residual_top = p_top if rejected and not sampler.greedy else None
            return out
        out.path.append(chosen)
        cur = chosen


def _accept_typical(draft: Draft, logits: torch.Tensor, sampler: Sampler, gen, out: Outcome) -> Outcome:
    """Medusa-2's typical acceptance (LOSSY): a node passes when p(token) > min(epsilon,
    delta * exp(-H(p))), p being the target's distribution after its parent; the deepest
    path of passing nodes wins (ties: the likelier path), and the next token is drawn from
    p after it. No rejection sampling: the output distribution is not exactly the target's.
    Each tested node's threshold goes to draft.extras["threshold"]."""
    eps, delta = draft.typical
    passed, score, thresholds = {}, {-1: 0.0}, [None] * len(out.nodes)
    rows = {}  # row -> (p, its top-k), each computed once
    for i, node in enumerate(out.nodes):  # parents come before children
        par = draft.parents[i]
        if par >= 0 and not passed[par]:
            passed[i] = False  # unreached: its parent failed
            continue
        if par + 1 not in rows:
            p = sampler.probs(logits[par + 1])
            rows[par + 1] = p, top_list(p)
        p, node.p_top = rows[par + 1]
        entropy = -float((p * torch.log(p + 1e-5)).sum())  # Medusa's own formula
        thresholds[i] = round(min(eps, delta * math.exp(-entropy)), 6)
        p_token = float(p[node.token])
        node.p, node.status = round(p_token, 6), "rejected"
        passed[i] = p_token > min(eps, delta * math.exp(-entropy))
        score[i] = score[par] + math.log(max(p_token, 1e-30))
    best = max((i for i in passed if passed[i]), key=lambda i: (out.nodes[i].depth, score[i]), default=None)
    out.path = tree.ancestors(draft.parents, best) if best is not None else []
    for i in out.path:
        out.nodes[i].status = "accepted"
    draft.extras["threshold"] = thresholds
    p = sampler.probs(logits[out.path[-1] + 1 if out.path else 0])
    out.last, out.last_origin = sampler.pick(p, gen), "bonus" if out.path else "target"
    out.last_p_top = top_list(p)
    return out
