"""The one verifier: a single target forward over every drafted node, then acceptance.

Shapes: U = tokens not yet in the KV cache (the whole prompt on the first step, then 1:
the pending token), N = drafted nodes, C = tokens already cached, V = vocabulary.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch

from . import tree
from .sampling import Sampler, one_hot, pad_to, residual, top_list
from .steps import Draft, Node, Verified
from .targets import as_target


def allowed_mask(parents: list[int], cached: int, uncached: int, window_sees: list[list[int]] = ()) -> torch.Tensor:
    """Bool (U+N+W, C+U+N+W): True where a query may attend. Context tokens attend causally; a node
    attends to all context and its own ancestors; a window token to all context and the block tokens
    it lists."""
    n, u = len(parents) + len(window_sees), uncached
    allowed = torch.ones(u + n, cached + u + n, dtype=torch.bool).tril(cached)  # causal part
    allowed[u - 1 :, cached + u - 1 :] = torch.tensor(tree.mask_rows(parents, window_sees), dtype=torch.bool)
    return allowed


def target_forward(target, cache, uncached: list[int], draft: Draft, hidden_layers: tuple[int, ...] = ()) -> Verified:
    """Run the target over uncached context + draft nodes + window in ONE pass -> logits (1+N+W, V)
    and, for the hidden_layers asked for, hidden states (layers, 1+N+W, H).

    Row 0 is the distribution after the pending token; row i+1 the one after node i; then
    the window's rows. Position ids are cache length + depth, so siblings share a position.
    target: paradec.core.targets' interface (a Hugging Face model is wrapped)."""
    inputs = pass_inputs(cache, uncached, draft)
    return verified(*as_target(target).forward(cache, *inputs, hidden_layers), keep=inputs[-1])


def target_forward_many(target, items: list[tuple], hidden_layers: tuple[int, ...] = ()) -> list[Verified]:
    """target_forward for several sequences, items [(cache, uncached, draft)] (each its own cache), in one pass
    of the target where it has forward_many (paradec.cpu.fast: the products over every sequence's rows at once),
    else one forward each (Hugging Face's). Each Verified is what target_forward gives its sequence alone."""
    target = as_target(target)
    passes = [(cache, *pass_inputs(cache, uncached, draft)) for cache, uncached, draft in items]
    if hasattr(target, "forward_many"):
        outs = target.forward_many(passes, hidden_layers)
    else:
        outs = [target.forward(*p, hidden_layers) for p in passes]
    return [verified(logits, states, keep=p[-1]) for (logits, states), p in zip(outs, passes)]


def pass_inputs(cache, uncached: list[int], draft: Draft) -> tuple[list[int], torch.Tensor, torch.Tensor | None, int]:
    """What a target's forward takes for one verify pass after the cache's entries: the tokens (uncached, nodes,
    window), their position ids (cache length + depth), the allowed pattern (None for a chain: the causal one)
    and how many rows' logits to keep (the pending token's onwards)."""
    cached = cache.get_seq_length()
    offsets = [len(uncached) - 1 + d for d in tree.depths(draft.parents) + draft.window_pos]
    pos = torch.tensor(list(range(len(uncached))) + offsets) + cached
    chain = not draft.window and tree.is_chain(draft.parents)  # its tree mask is the causal one
    allowed = None if chain else allowed_mask(draft.parents, cached, len(uncached), draft.window_sees)
    keep = 1 + len(draft.tokens) + len(draft.window)
    return uncached + draft.tokens + draft.window, pos, allowed, keep


def verified(logits: torch.Tensor, states: torch.Tensor | None, keep: int) -> Verified:
    """A forward's output as the drafter reads it: float logits, and the hidden states split into the kept rows
    and the rows before them (the prompt's, on the first pass)."""
    if states is None:
        return Verified(logits.float())
    prefix = states[:, :-keep] if states.shape[1] > keep else None  # (layers, U+N+W, H): the prompt's rows
    return Verified(logits.float(), states[:, -keep:], prefix)


def pass_ms(forwards: dict, context: list[int], sizes, repeats: int) -> dict[str, dict[int, list[float]]]:
    """ms of one chain verify pass over n tokens (the pending token and n - 1 drafts, cycled from the context)
    after the context is cached, for each forward (name -> a target or a Hugging Face model) and each n in
    sizes, `repeats` times. Sizes and forwards are interleaved, so load from other processes falls on all
    of them alike. The cost curve's one probe: the Roofline page's file and Medusa's tree sizing use it."""
    times = {name: {n: [] for n in sizes} for name in forwards}
    with torch.inference_mode():
        for _ in range(repeats):
            for n in sizes:
                for name, forward in forwards.items():
                    t = as_target(forward)
                    cache = t.new_cache()
                    target_forward(t, cache, context, Draft())
                    draft = Draft(tokens=(context * n)[: n - 1], parents=tree.chain_parents(n - 1))
                    t0 = time.perf_counter()
                    target_forward(t, cache, context[-1:], draft)
                    times[name][n].append((time.perf_counter() - t0) * 1e3)
    return times


@dataclass
class Test:
    """One drafted node the verifier tested: against which distribution, and the draw."""

    node: int
    row: int  # the logits row of its parent
    p: torch.Tensor | None  # the target's p it was tested against (a residual for a later sibling); greedy: None
    q: torch.Tensor | None  # the draft's q (None: a deterministic proposal, q one-hot)
    accept_prob: float | None = None  # min(1, p/q) when sampling
    u: float | None = None


@dataclass
class Outcome:
    """What accept() decides. The trace's per-node p, q and top-k lists are not computed here but by
    record(), after the timed region: what is timed is the decision, not its bookkeeping."""

    path: list[int] = field(default_factory=list)  # accepted node indices, root first
    status: list[str] = field(default_factory=list)  # per node: accepted | rejected | unreached
    last: int = 0  # the token the target adds after the path
    last_origin: str = "target"  # bonus | resampled | target
    tests: list[Test] = field(default_factory=list)
    last_row: int = 0  # where the last token was drawn: the logits row,
    last_p: torch.Tensor | None = None  # and, when sampling after a rejection, the residual it was drawn from
    thresholds: list[float | None] | None = None  # typical acceptance: each node's threshold on p (None: untested)


def accept(draft: Draft, logits: torch.Tensor, sampler: Sampler, gen) -> Outcome:
    """Walk from the pending token, keep the longest path the target agrees with, add one token.

    Greedy: a child is accepted when it is the target's argmax. Sampling: each child in turn
    is accepted with probability min(1, p/q); on rejection p becomes norm(max(0, p - q)) and
    the next sibling is tried (a chain has one child per node: plain speculative sampling).
    A deterministic proposal has a one-hot q, so it is accepted with probability p(token)."""
    out = Outcome(status=["unreached"] * len(draft.tokens))
    if draft.typical and not sampler.greedy:  # at temperature 0 typical acceptance is greedy
        return _accept_typical(draft, logits, sampler, gen, out)
    kids = tree.children(draft.parents)
    cur = -1
    while True:
        row = cur + 1
        chosen = _greedy_child(draft, kids[cur], logits[row], out) if sampler.greedy else \
            _sampled_child(draft, kids[cur], sampler.probs(logits[row]), row, gen, out)
        if chosen is None:
            rejected = any(t.row == row for t in out.tests)
            out.last_row = row
            out.last = int(torch.argmax(logits[row])) if sampler.greedy else sampler.pick(out.last_p, gen)
            out.last_origin = "resampled" if rejected else ("bonus" if out.path else "target")
            return out
        out.path.append(chosen)
        cur = chosen


def _greedy_child(draft: Draft, kids: list[int], logits: torch.Tensor, out: Outcome) -> int | None:
    """The first child that is the target's argmax; the siblings tested before it are rejected."""
    best = int(torch.argmax(logits))
    for c in kids:
        out.tests.append(Test(c, draft.parents[c] + 1, None, draft.q[c] if draft.q else None))
        out.status[c] = "accepted" if draft.tokens[c] == best else "rejected"
        if out.status[c] == "accepted":
            return c
    return None


def _sampled_child(draft: Draft, kids: list[int], p: torch.Tensor, row: int, gen, out: Outcome) -> int | None:
    """Rejection sampling over the children in turn; out.last_p is what is left of p at the end."""
    for c in kids:
        token, q = draft.tokens[c], draft.q[c] if draft.q else None
        q_token = 1.0 if q is None else float(q[token])  # a deterministic proposal: q is one-hot
        test = Test(c, row, p, q, min(1.0, float(p[token]) / max(q_token, 1e-30)), float(torch.rand((), generator=gen)))
        out.tests.append(test)
        out.status[c] = "accepted" if test.u < test.accept_prob else "rejected"
        if out.status[c] == "accepted":
            return c
        p = residual(p, one_hot(token, p) if q is None else pad_to(q, p))  # the next sibling meets what is left
    out.last_p = p
    return None


def record(draft: Draft, logits: torch.Tensor, out: Outcome, sampler: Sampler) -> tuple[list[Node], list, list | None]:
    """The trace's view of a decided step: each node with the p and q it was tested with (probability of
    its token and top-k lists), the top-k of p where the last token was drawn, and of the residual
    it was drawn from after a rejection. Bookkeeping only: the engine runs it outside the timed region."""
    nodes = [Node(token=t, parent=par, depth=d, status=st)
             for t, par, d, st in zip(draft.tokens, draft.parents, tree.depths(draft.parents), out.status)]
    tops, rows = {}, {}  # one top-k list per distinct distribution, one softmax per row

    def p_of(row):
        if row not in rows:
            rows[row] = sampler.probs(logits[row])
        return rows[row]

    def top(dist):
        if id(dist) not in tops:
            tops[id(dist)] = top_list(dist)
        return tops[id(dist)]

    for t in out.tests:
        node, p = nodes[t.node], p_of(t.row) if t.p is None else t.p
        p_top, q_top = top(p), [[node.token, 1.0]] if t.q is None else top(t.q)
        # Each list also names the other's tokens, so both p and q are known on every token either
        # names: the microscope's simulation then buckets only what neither top-k holds.
        node.p, node.p_top = round(float(p[node.token]), 6), _with(p_top, q_top, p)
        node.q = 1.0 if t.q is None else round(float(t.q[node.token]), 6)
        node.q_top = _with(q_top, p_top, t.q)
        node.accept_prob, node.u = t.accept_prob, t.u
    last_p_top = top(p_of(out.last_row))
    residual_top = top(out.last_p) if out.last_origin == "resampled" and not sampler.greedy else None
    return nodes, last_p_top, residual_top


def _with(own: list, other: list, dist: torch.Tensor | None) -> list:
    """own's [token, prob] pairs, then dist's probability of the tokens only `other` names (0 where dist
    is None: a deterministic proposal's one-hot q), likeliest first."""
    have = {k for k, _ in own}
    more = [[k, 0.0 if dist is None else round(float(dist[k]), 6)] for k, _ in other if k not in have]
    return sorted(own + more, key=lambda kv: -kv[1])


def _accept_typical(draft: Draft, logits: torch.Tensor, sampler: Sampler, gen, out: Outcome) -> Outcome:
    """Medusa-2's typical acceptance (LOSSY): a node passes when p(token) > min(epsilon,
    delta * exp(-H(p))), p being the target's distribution after its parent; the deepest
    path of passing nodes wins (ties: the likelier path), and the next token is drawn from
    p after it. No rejection sampling: the output distribution is not exactly the target's.
    Each tested node's threshold goes to out.thresholds."""
    eps, delta = draft.typical
    passed, score, out.thresholds = {}, {-1: 0.0}, [None] * len(draft.tokens)
    rows = {}  # row -> p, each computed once
    for i, (token, par) in enumerate(zip(draft.tokens, draft.parents)):  # parents come before children
        if par >= 0 and not passed[par]:
            passed[i] = False  # unreached: its parent failed
            continue
        if par + 1 not in rows:
            rows[par + 1] = sampler.probs(logits[par + 1])
        p = rows[par + 1]
        entropy = -float((p * torch.log(p + 1e-5)).sum())  # Medusa's own formula
        threshold = min(eps, delta * math.exp(-entropy))
        out.thresholds[i] = round(threshold, 6)  # the trace's copy; the test uses the exact value
        p_token = float(p[token])
        out.tests.append(Test(i, par + 1, p, draft.q[i] if draft.q else None))
        out.status[i] = "rejected"
        passed[i] = p_token > threshold
        score[i] = score[par] + math.log(max(p_token, 1e-30))
    depth = tree.depths(draft.parents)
    best = max((i for i in passed if passed[i]), key=lambda i: (depth[i], score[i]), default=None)
    out.path = tree.ancestors(draft.parents, best) if best is not None else []
    for i in out.path:
        out.status[i] = "accepted"
    out.last_row = out.path[-1] + 1 if out.path else 0
    p = rows[out.last_row] if out.last_row in rows else sampler.probs(logits[out.last_row])
    out.last = sampler.pick(p, gen)
    out.last_origin = "bonus" if out.path else "target"
    return out
