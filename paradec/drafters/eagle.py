"""EAGLE-1, -2 and -3 (Li et al.): a head of one decoder layer (or a few) drafts a tree at the feature level.

Offsets. Head entry t reads (feature f_t, token x_{t+1}) and its output predicts x_{t+2}.
After a verify pass the target has given the features of the pending token and of every
accepted node, and the bonus token is known, so commit() queues those (feature, next token)
pairs; propose() feeds them to the head (its own KV cache, one entry per context position)
and the last entry's output gives the depth-1 candidates. A candidate at depth d is fed as
(its parent's output, its token) at position P + d - 1, where P is the number of context
entries, and attends to every context entry and to its ancestors' entries (tree mask);
those entries are dropped after the step (the accepted tokens come back with the target's
true features). The first step drafts nothing: features exist only after the prefill.

Trees. EAGLE-1 (`eagle`) grows a fixed tree, a list of rank paths as Medusa's. EAGLE-2 and
EAGLE-3 (`eagle2`, `eagle3`) grow a dynamic one: at each depth the top_k candidates by
cumulative draft log-probability are expanded (top_k children each), then every drafted
candidate is reranked and the best total_tokens are verified. Proposals are deterministic
(top-k, not sampled), so q is one-hot: greedy acceptance is exact, and sampling uses the
verifier's rejection over siblings, which keeps the target's distribution.

Prompt lookup in the tree (`lookup` = n, EAGLE-2/3). The continuation of the last n-gram's earlier
occurrence (paradec.drafters.pld, up to n tokens) is grafted onto the kept tree: it follows the
tree's nodes while their tokens agree, and its rest hangs off the last one met, so one verify pass
tests both and the step keeps whichever branch the target accepts further. A copied token is a
deterministic proposal like the head's, so greedy decoding stays exact and sampling keeps the
target's distribution (the siblings' rejection rule); the record names the branch (looked_up).

Depth. A rule of paradec.drafters.draft_length (draft_length=fixed|heuristic|confidence|learned)
decides before each depth whether to grow one more, asked along the most likely branch so far
(the candidate with the best cumulative score); k = `depth` (EAGLE-1: the static tree's depth,
which it cuts). fixed grows every depth, as EAGLE does."""
from __future__ import annotations

import json
import math
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import torch

from .. import catalog
from ..core import records
from ..core import tree as trees
from ..core.drafter import Drafter
from ..core.errors import first_line
from ..core.steps import Draft
from ..cpu import fast, view
from ..traces import files
from . import draft_length as lengths
from . import eagle_head, pld
from .eagle_head import fuse_layers

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "drafters"
SHIPPED = {1: ASSETS / "eagle-smollm2", 3: ASSETS / "eagle3-smollm2"}
# The prompt-lookup branch's longest and shortest n-gram: prompt lookup's own defaults.
LOOKUP_NGRAMS = tuple(catalog.method("pld").defaults()[name] for name in ("ngram_max", "ngram_min"))
TREES = {  # EAGLE-1 static trees (rank paths); sized for a CPU verify pass of about a dozen tokens
    "chain4": [[0], [0, 0], [0, 0, 0], [0, 0, 0, 0]],
    "cpu10": [[0], [1], [0, 0], [0, 1], [1, 0], [0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0, 0]],
}


class Eagle(Drafter):
    """EAGLE-1: the head drafts a static tree of rank paths."""

    name, version = "eagle", 1

    def __init__(self, target_model, *, head: str, tree: str, draft_length: str, threshold: float):
        """head: a folder (paradec's own or an official EAGLE-1 checkpoint; "" = the shipped head);
        tree: a preset name or rank paths as JSON; draft_length, threshold: the rule that cuts it."""
        self.params = dict(head=head, tree=tree, draft_length=draft_length, threshold=threshold)
        nodes, _ = trees.paths_to_tree(trees.tree_spec(tree, TREES))  # implied prefixes included, parents first
        self.want = {}  # rank path -> the child ranks the tree asks for under it
        for p in nodes:
            self.want.setdefault(p[:-1], []).append(p[-1])
        self.depth = max(map(len, nodes))
        self.width = 1 + max(p[-1] for p in nodes)  # the top-k a head output must give
        self.schedule = lengths.Schedule(draft_length, self.depth, threshold, most=self.depth)
        self._load(target_model, head)

    def _load(self, target_model, spec: str) -> None:
        target = view.as_view(target_model)
        cfg = target.config
        folder = Path(spec or SHIPPED[self.version])
        meta = _meta(folder)  # a head that cannot fit is refused from its config, its weights unread
        self._fits(meta.get("eagle_version") or self.version, meta.get("hidden_size") or cfg.hidden_size, cfg)
        try:
            loaded = _head(str(folder), _stamp(folder), target.device, target.dtype)
        except Exception as e:  # a file from the user: whatever its reader fails with is one line
            where = spec or f"the shipped head (train it: python -m paradec.train eagle --version {self.version})"
            raise ValueError(f"cannot load an EAGLE head from {where}: {first_line(e)}") from None
        self._fits(loaded.version, loaded.hidden_size, cfg)  # an official checkpoint's config may not say
        self.head, self.embed = loaded, target.embed  # the head: shared, read-only
        ids = loaded.vocab_ids
        # EAGLE-1/2 score with the target's LM-head rows (a subset's: a copy, packed for the kernel where it runs)
        self.rows = None if loaded.version == 3 else target.head(ids)
        vocab = cfg.vocab_size if ids is None else len(ids)
        if self.width > vocab:
            raise ValueError(f"the tree asks for rank {self.width - 1} but the head scores only {vocab} tokens")
        self.hidden_layers = (-1,) if loaded.version == 1 else fuse_layers(cfg.num_hidden_layers)

    def _fits(self, version, hidden_size, cfg) -> None:
        if version != self.version:
            raise ValueError(f"{self.name} needs an EAGLE-{self.version} head, this one is EAGLE-{version}")
        if hidden_size != cfg.hidden_size:
            raise ValueError(f"a head of width {hidden_size} does not fit a target of width {cfg.hidden_size}")

    def begin(self, prompt_ids):
        self.cache = eagle_head.HeadCache()  # this run's own
        self.todo = None  # (features (m, F), next tokens (m,)) waiting to enter the head
        self.rule = self.schedule.rule()
        self.drafted = 0  # the depths the last proposal grew, for the rule's update

    @torch.inference_mode()
    def propose(self, ctx, sampler, gen) -> Draft:
        if self.todo is None:
            return Draft(record=records.Eagle())
        feats, toks = self.todo
        P0 = len(self.cache)
        pos = torch.arange(P0, P0 + len(toks), device=feats.device)[None]
        self._root = self.head(feats[None], self.embed(toks)[None], pos, cache=self.cache)[0, -1]
        self.todo, P = None, len(self.cache)
        nodes = _Nodes()
        layer = self._children(nodes, -1, self._logq(self._root[None])[0])
        while self._deeper(nodes, layer):
            chosen = self._to_expand(nodes, layer)
            if not chosen:
                break
            logq = self._logq(self._feed(nodes, chosen, P))  # one LM-head product for every expanded node
            layer = [c for i, row in zip(chosen, logq) for c in self._children(nodes, i, row)]
        self.cache.crop(P)
        keep = self._select(nodes)
        self.drafted = max(nodes.depth)
        return nodes.draft(keep, 1 + nodes.passes, self.rule, self.drafted)

    def _deeper(self, nodes, layer: list[int]) -> bool:
        """Grow one depth more? The rule's answer along the best branch of the newest depth."""
        path = trees.ancestors(nodes.parent, min(layer, key=lambda i: (-nodes.score[i], i)))
        return lengths.reach(self.rule, [nodes.dist[i].exp() for i in path]) > len(path)

    def _logq(self, outs) -> torch.Tensor:
        """Head outputs (n, H) -> draft log-probabilities (n, V') over the head's vocabulary."""
        return torch.log_softmax(self.head.logits(outs, self.rows).float(), dim=-1)

    def _children(self, nodes, parent: int, logq) -> list[int]:
        """Add the children the tree wants under `parent`, from the draft's log q there."""
        ranks = self._ranks(nodes, parent)
        if not ranks:
            return []
        top_q, top_i = logq.topk(max(ranks) + 1)
        ids = top_i if self.head.vocab_ids is None else self.head.vocab_ids[top_i]
        return [nodes.add(int(ids[r]), parent, r, float(top_q[r]), logq) for r in ranks]

    def _ranks(self, nodes, parent: int) -> list[int]:
        return self.want.get(nodes.path(parent), [])

    def _to_expand(self, nodes, layer: list[int]) -> list[int]:
        return [i for i in layer if self.want.get(nodes.path(i))]

    def _select(self, nodes) -> list[int]:
        return list(range(len(nodes.token)))

    def _feed(self, nodes, chosen: list[int], P: int) -> torch.Tensor:
        """One head pass over the chosen candidates (tree mask) -> their outputs (n, H)."""
        start = len(self.cache)
        feats = torch.stack([nodes.out[nodes.parent[i]] if nodes.parent[i] >= 0 else self._root for i in chosen])
        toks = torch.tensor([nodes.token[i] for i in chosen], device=feats.device)
        pos = torch.tensor([[P + nodes.depth[i] - 1 for i in chosen]], device=feats.device)
        mask = torch.zeros(len(chosen), start + len(chosen), dtype=torch.bool, device=feats.device)
        mask[:, :P] = True
        for row, i in enumerate(chosen):
            nodes.entry[i] = start + row
            for a in trees.ancestors(nodes.parent, i):
                mask[row, nodes.entry[a]] = True
        out = self.head(feats[None], self.embed(toks)[None], pos, mask[None, None], self.cache)[0]
        for row, i in enumerate(chosen):
            nodes.out[i] = out[row]
        nodes.passes += 1
        return out

    def commit(self, ctx, draft, accepted, verified):
        """Queue the (target feature, next token) pairs of the pending token and the accepted nodes."""
        rows = [0] + [a + 1 for a in accepted]
        hidden = verified.hidden[:, rows]  # (layers, m, H)
        if verified.prefix_hidden is not None:  # first step: the prompt's own positions come first
            hidden = torch.cat([verified.prefix_hidden, hidden], dim=1)
        feats = hidden.permute(1, 0, 2).flatten(1)  # (m, layers * H): EAGLE-3 fuses three layers
        self.todo = feats, torch.tensor(ctx[-feats.shape[0]:], device=feats.device)
        if self.drafted:  # the depths the head proposed, and how far down them the target went
            self.rule.update(min(len(accepted), self.drafted), self.drafted)


class Eagle2(Eagle):
    """EAGLE-2: EAGLE-1's head, a dynamic tree (expand by confidence, then rerank)."""

    name, version = "eagle2", 1

    def __init__(self, target_model, *, head: str, depth: int, top_k: int, total_tokens: int, lookup: int,
                 draft_length: str, threshold: float):
        """depth: draft steps (the most a rule other than the heuristic grows); top_k: candidates
        expanded per step and children per candidate; total_tokens: candidates kept for the verify
        pass; lookup: the most tokens a prompt-lookup branch adds beside them (0: none);
        draft_length, threshold: the rule that decides how many depths a step grows."""
        self.params = dict(head=head, depth=depth, top_k=top_k, total_tokens=total_tokens, lookup=lookup,
                           draft_length=draft_length, threshold=threshold)
        self.schedule = lengths.Schedule(draft_length, depth, threshold)
        self.depth, self.top_k, self.total, self.lookup = depth, top_k, total_tokens, lookup
        self.width = top_k
        self._load(target_model, head)

    def _ranks(self, nodes, parent: int) -> list[int]:
        return list(range(self.top_k))

    def _to_expand(self, nodes, layer: list[int]) -> list[int]:
        """The top_k candidates of the newest depth by cumulative log-probability."""
        return sorted(layer, key=lambda i: (-nodes.score[i], i))[: self.top_k]

    def begin(self, prompt_ids):
        super().begin(prompt_ids)
        self.markers = pld.turn_markers(prompt_ids)

    def propose(self, ctx, sampler, gen) -> Draft:
        draft = super().propose(ctx, sampler, gen)
        found = pld.lookup(ctx, self.lookup, *LOOKUP_NGRAMS, self.markers) if self.lookup else None
        if found is None:
            return draft
        tokens, parents, path = trees.graft(draft.tokens, draft.parents, found[0])
        record = replace(draft.record, looked_up=path, draft_q=draft.record.draft_q + [1.0] * (len(tokens) - len(
            draft.tokens)))  # a copied token's q is one-hot
        return replace(draft, tokens=tokens, parents=parents, record=record)

    def _select(self, nodes) -> list[int]:
        """Rerank every candidate; keep the best total_tokens. A child never scores above its
        parent (log q <= 0) and ties go to the shallower node, so the kept set is a tree."""
        best = sorted(range(len(nodes.token)), key=lambda i: (-nodes.score[i], nodes.depth[i], i))
        return sorted(best[: self.total])


class Eagle3(Eagle2):
    """EAGLE-3: fused low/middle/high target features, a head trained with training-time
    test, a reduced draft vocabulary; EAGLE-2's dynamic tree."""

    name, version = "eagle3", 3


def _meta(folder: Path) -> dict:
    """A head folder's config.json ({} when it cannot be read: the loader then says why)."""
    try:
        meta = json.loads(files.read_regular(folder / "config.json", 2**20))
    except (OSError, ValueError, RecursionError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _stamp(folder: Path) -> tuple:
    """When the head's files last changed: a head retrained in place is read again, not the cached one."""
    out = []
    for name in ("config.json", *eagle_head.WEIGHT_FILES):
        try:
            st = (folder / name).stat()
            out.append((name, st.st_mtime_ns, st.st_size))
        except OSError:
            pass
    return tuple(out)


@lru_cache(maxsize=4)  # a head is read once, not per run: a service's refused or repeated runs add nothing
def _head(folder: str, _files: tuple, device: torch.device, dtype: torch.dtype) -> eagle_head.EagleHead:
    """The head in `folder`, on the target's device and dtype, its linears packed for the CPU kernel.
    Shared by every run that asks for it: read-only (each run keeps its own HeadCache). _files (the folder's
    _stamp) is only the cache's key: a head saved again is read again."""
    loaded, _ = eagle_head.load(folder)
    return fast.pack_linears(loaded.to(device, dtype))


class _Nodes:
    """Drafted candidates, parents before children; each remembers its rank path and
    cumulative draft log-probability (the score EAGLE-2 ranks by)."""

    def __init__(self):
        self.token, self.parent, self.rank, self.depth, self.score, self.logq = [], [], [], [], [], []
        self.out, self.entry, self.passes = [], [], 0
        self.dist = []  # the log q each candidate was picked from (its parent's output; shared by siblings)

    def path(self, i: int) -> tuple[int, ...]:
        return () if i < 0 else tuple(self.rank[a] for a in trees.ancestors(self.parent, i))

    def add(self, token: int, parent: int, rank: int, logq: float, dist: torch.Tensor) -> int:
        self.token.append(token)
        self.parent.append(parent)
        self.rank.append(rank)
        self.depth.append(1 if parent < 0 else self.depth[parent] + 1)
        self.score.append(logq + (self.score[parent] if parent >= 0 else 0.0))
        self.logq.append(logq)
        self.dist.append(dist)
        self.out.append(None)
        self.entry.append(None)
        return len(self.token) - 1

    def draft(self, keep: list[int], forwards: int, rule, depth: int) -> Draft:
        """The kept candidates as a Draft (renumbered); its record holds every candidate, for the page,
        beside the draft-length rule's part (depth: the depths grown)."""
        new = {old: n for n, old in enumerate(keep)}
        drafted = [records.Candidate(t, p, d, round(s, 4), r, o is not None, i in new) for i, (t, p, d, s, r, o) in
                   enumerate(zip(self.token, self.parent, self.depth, self.score, self.rank, self.out))]
        record = rule.record(depth, records.Eagle, drafted=drafted,
                             draft_q=[round(math.exp(self.logq[i]), 5) for i in keep])
        return Draft(tokens=[self.token[i] for i in keep], parents=[new.get(self.parent[i], -1) for i in keep],
                     forwards=forwards, record=record)
