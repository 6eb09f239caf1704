"""Medusa (Cai et al., 2024): K heads on the target's last hidden state guess the tokens
after the next one; their top-k guesses form a sparse tree verified in one pass.

Offsets. The verify pass returns the hidden state h of every row. After a step, h of the
last accepted node (or of the pending token, row 0, when none was accepted) sits at some
position s; the target's own logits there gave the bonus token s + 1, which becomes the
next pending token. Head k on that h predicts position s + 1 + k = pending + k: so depth k
of the next tree is head k's guess. The first step drafts nothing: the prompt's last hidden
state only exists after the prefill, which is the first verify pass.

A tree is a list of paths (`medusa_choices`): path [r1, r2] is head 1's rank-r1 token
followed by head 2's rank-r2 token (Medusa-1's heads see only h, so a node's token
depends on its depth and rank alone). Proposals are deterministic (one-hot q): exact
acceptance is greedy matching, or, when sampling, the verifier's rejection sampling over
siblings (accept a child with p(token), else drop it from p and try the next), which is
lossless, as Medusa's match-based sampling is. Medusa-2's typical acceptance is an option,
and LOSSY.

Depth. A rule of paradec.drafters.draft_length (draft_length=fixed|heuristic|confidence|learned)
decides how many of the tree's depths a step keeps, asked along the top path (each head's
rank-0 token, with that head's q); fixed keeps them all, as Medusa does."""
from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path

import torch

from ..core import records
from ..core import tree as trees
from ..core.drafter import Drafter
from ..core.errors import first_line
from ..core.steps import Draft
from ..cpu import fast, view
from . import draft_length as lengths
from . import medusa_heads
from .subset import VocabSubset

SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "drafters" / "medusa-smollm2"
TREES = trees.MEDUSA_TREES


class Medusa(Drafter):
    name = "medusa"
    hidden_layers = (-1,)  # the final, normed hidden state: what the heads read

    def __init__(self, target_model, *, heads: str, tree: str, acceptance: str, epsilon: float, delta: float,
                 draft_length: str, threshold: float):
        """heads: a folder or file of heads ("" = the shipped heads for the embedded model);
        tree: a preset name, or paths as JSON ("" = the heads' own default tree);
        draft_length, threshold: the rule that decides how many of its depths a step keeps."""
        self.params = dict(heads=heads, tree=tree, acceptance=acceptance, epsilon=epsilon,
                           delta=delta, draft_length=draft_length, threshold=threshold)
        if epsilon <= 0 or delta <= 0:
            raise ValueError("typical acceptance needs epsilon > 0 and delta > 0")
        loaded = _load_heads(heads)
        self.paths = _parse_tree(tree, loaded)
        self.nodes, self.parents = trees.paths_to_tree(self.paths)
        self.width = 1 + max(p[-1] for p in self.nodes)  # how many top-k tokens a head must give
        self.depth = max(map(len, self.nodes))  # heads past the tree's depth are not run
        self.schedule = lengths.Schedule(draft_length, self.depth, threshold, most=self.depth)
        self.heads, self.lm, self.ids = _prepare(loaded, target_model, self.depth, self.width)

    @staticmethod
    def lossy(params: dict) -> str:
        if params.get("acceptance") != "typical":
            return ""
        return "medusa acceptance=typical is LOSSY when sampling: the output does not follow the target's distribution"

    def begin(self, prompt_ids):
        self.h = None  # hidden state of the last accepted position; None until the prefill ran
        self.rule = self.schedule.rule()
        self.drafted = 0  # the depths the last proposal kept, for the rule's update

    @torch.inference_mode()
    def propose(self, ctx, sampler, gen) -> Draft:
        label = "typical (LOSSY)" if self.params["acceptance"] == "typical" else "exact"
        if self.h is None:
            return Draft(record=records.Medusa(acceptance=label))
        probs = torch.softmax(self.heads.logits(self.h, self.lm, self.depth).float(), dim=-1)  # (depth, V')
        depth = lengths.reach(self.rule, list(probs))  # along the top path, each head's q (k = the tree's depth)
        nodes = [p for p in self.nodes if len(p) <= depth]  # shorter paths first: a prefix, parents included
        top_p, top_i = probs.topk(self.width, dim=-1)
        top_ids = (self.ids[top_i] if self.ids is not None else top_i).tolist()
        top_p = top_p.tolist()
        tokens = [top_ids[len(p) - 1][p[-1]] for p in nodes]
        record = self.rule.record(
            depth, records.Medusa, acceptance=label, rank=[p[-1] for p in nodes],
            head_p=[round(top_p[len(p) - 1][p[-1]], 6) for p in nodes],
            head_top=[[[t, round(q, 6)] for t, q in zip(ti, tp)] for ti, tp in zip(top_ids, top_p)])
        self.drafted = depth
        typical = (self.params["epsilon"], self.params["delta"]) if label != "exact" else None
        return Draft(tokens=tokens, parents=self.parents[: len(nodes)], typical=typical, record=record)

    def commit(self, ctx, draft, accepted, verified):
        row = accepted[-1] + 1 if accepted else 0  # row 0 is the pending token
        self.h = verified.hidden[0, row].clone()
        if draft.tokens:
            self.rule.update(len(accepted), self.drafted)

    def record(self, draft, outcome):
        """Typical acceptance's thresholds are the verify pass's: the record proposed, with them."""
        return draft.record if outcome.thresholds is None else replace(draft.record, threshold=outcome.thresholds)


def _load_heads(spec: str) -> medusa_heads.MedusaHeads:
    if not spec and not SHIPPED.exists():
        raise ValueError("no shipped heads: train them (python -m paradec.train medusa) or give heads=PATH")
    try:
        return medusa_heads.load(spec or SHIPPED)
    except Exception as e:  # a file from the user: whatever its reader fails with is one line
        raise ValueError(f"cannot load heads {spec!r}: {first_line(e)}") from None


def _parse_tree(spec: str, heads) -> list[list[int]]:
    if not spec:
        return heads.tree or TREES["cpu12"]
    return trees.tree_spec(spec, TREES)


def _prepare(heads, target_model, depth: int, width: int):
    """Heads on the target's device and dtype (a copy when they differ, or to pack them for the CPU kernel:
    the loaded ones are shared), the LM-head rows they score with (paradec.cpu.view's Rows; None: their own), and
    the subset's token ids (None: all)."""
    target = view.as_view(target_model)
    cfg = target.config
    if heads.heads[0][0].linear.weight.shape[1] != cfg.hidden_size:
        raise ValueError(f"heads of hidden size {heads.heads[0][0].linear.weight.shape[1]} do not fit a target "
                         f"of hidden size {cfg.hidden_size}")
    if depth > heads.num_heads:
        raise ValueError(f"the tree is {depth} deep but there are only {heads.num_heads} heads")
    p, cpu = next(heads.parameters()), target.device.type == "cpu" and target.dtype == torch.float32
    if (p.device, p.dtype) != (target.device, target.dtype) or cpu:  # float32 on the CPU: paradec's kernel
        heads = fast.pack_linears(copy.deepcopy(heads).to(target.device, target.dtype))
    if heads.own_lm_heads:  # the official format: full-vocabulary LM heads of their own
        if heads.heads[0][-1].weight.shape[0] != cfg.vocab_size:
            raise ValueError("the heads' vocabulary does not match the target's")
        rows, ids = None, None
    elif heads.vocab_ids is not None:
        subset = VocabSubset(heads.vocab_ids.to(target.device), cfg.vocab_size)
        rows, ids = target.head(subset.ids), subset.ids  # a copy, packed for the kernel where it runs
    else:
        rows, ids = target.head(), None
    vocab = rows.n if rows is not None else cfg.vocab_size
    if width > vocab:
        raise ValueError(f"the tree asks for rank {width - 1} but the heads score only {vocab} tokens")
    return heads, rows, ids
