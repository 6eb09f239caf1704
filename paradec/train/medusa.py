"""Training Medusa-1 heads on self-distillation data (python -m paradec.train medusa).

The target stays frozen: its final hidden states come from the shards, and the heads
share its LM head restricted to the V' tokens most frequent in the target's own answers.
Head k on the hidden state at position t learns the token at t + 1 + k (cross-entropy,
weighted 0.8^k as in the paper), on positions whose target token is part of an answer
and inside the subset. A slice of the sequences is kept out to measure each head's top-k
accuracy, from which the default tree is grown (see best_tree)."""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..data import ASSETS
from ..drafters.medusa_heads import MedusaHeads
from ..traces import files
from .loop import CHECKPOINT, Plan, done, fit
from .selfdistill import VALIDATION_EVERY, add_data_args, command_line, frequent_tokens, learned_from, validation

TOP = 10  # ranks measured per head
EVAL_EVERY = 50
EVAL_POSITIONS = 8192  # kept-out positions scored every EVAL_EVERY steps (all of them at the end): ~1 s, not ~20


@dataclass
class Data:
    x: torch.Tensor  # (N, H) float16 hidden states
    y: torch.Tensor  # (N, K) subset index of the token at t + 1 + k; -1: no target there, -2: outside the subset
    w: torch.Tensor  # (N, K) loss weight: 1 for answer tokens, the prompt weight for prompt tokens


def positions(shards: list[dict], heads: int, val: bool, prompt: bool = False):
    """Hidden states, the K next-next tokens (-1: none) and whether each is an answer token,
    for every position where head 1 has a target: (N, H), (N, K) ids, (N, K) bool. Targets
    are answer tokens, and with `prompt` the prompt's own tokens too (teacher forcing)."""
    xs, ys, answers = [], [], []
    for s in shards:
        keep = torch.tensor([validation(int(p)) == val for p in s["prompt"]], dtype=torch.bool)
        tokens, answer, hidden = s["tokens"][keep].long(), s["answer"][keep], s["hidden"][keep]
        target = s["mask"][keep] if prompt else answer
        L = tokens.shape[1]
        y = torch.full((*tokens.shape, heads), -1, dtype=torch.long)
        is_answer = torch.zeros(y.shape, dtype=torch.bool)
        for k in range(1, heads + 1):  # head k at t predicts t + 1 + k
            if L > 1 + k:
                y[:, : L - 1 - k, k - 1] = torch.where(target[:, 1 + k :], tokens[:, 1 + k :], -1)
                is_answer[:, : L - 1 - k, k - 1] = answer[:, 1 + k :]
        rows = y[..., 0] >= 0
        xs.append(hidden[rows])
        ys.append(y[rows])
        answers.append(is_answer[rows])
    return torch.cat(xs), torch.cat(ys), torch.cat(answers)


def to_subset(y: torch.Tensor, ids: torch.Tensor, vocab: int) -> torch.Tensor:
    table = torch.full((vocab,), -2, dtype=torch.long)
    table[ids] = torch.arange(len(ids))
    return torch.where(y >= 0, table[y.clamp(min=0)], -1)


def train(shards: list[dict], lm_head: torch.Tensor, heads: int = 4, layers: int = 1, steps: int = 600,
          vocab: int = 4096, batch: int = 512, lr: float = 1e-3, seed: int = 0, prompt_weight: float = 0.0,
          log=None, checkpoint=None, baseline: MedusaHeads | None = None) -> tuple[MedusaHeads, dict]:
    """-> (trained heads, stats: data sizes, coverage, loss, per-head top-k accuracy; with `baseline`, the
    top-k accuracy of those heads, e.g. the shipped ones, on the same kept-out positions as "before")."""
    torch.manual_seed(seed)
    x, y, is_answer = positions(shards, heads, val=False, prompt=prompt_weight > 0)
    ids = frequent_tokens(torch.where(is_answer, y, -1), vocab)  # the answers' tokens: what decoding meets
    train_set = Data(x, to_subset(y, ids, lm_head.shape[0]), torch.where(is_answer, 1.0, prompt_weight))
    vx, vy, _ = positions(shards, heads, val=True)
    val_set = Data(vx, to_subset(vy, ids, lm_head.shape[0]), torch.ones(vy.shape))
    model = MedusaHeads(x.shape[1], heads, layers, vocab_ids=ids.int())
    rows = lm_head.index_select(0, ids).float()
    before = {} if baseline is None else {"before": baseline_accuracy(baseline, lm_head, vx, vy)}  # fails fast
    loss, best_step = _fit(model, rows, train_set, val_set, steps, batch, lr, seed, log, checkpoint)
    stats = {"train_positions": len(x), "val_positions": len(vx), "vocab": len(ids),
             "coverage": round(float(((train_set.y >= 0) & is_answer).sum() / max(1, is_answer.sum())), 4),
             "final_loss": round(loss, 4), "kept_step": best_step, "accuracy": accuracy(model, rows, val_set), **before}
    return model, stats


def baseline_accuracy(heads: MedusaHeads, lm_head: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> list[list[float]]:
    """Other heads' top-k accuracy on these positions ((N, H) states, (N, K) token ids), scored in their own V'."""
    if heads.num_heads != y.shape[1] or heads.vocab_ids is None:
        raise ValueError(f"the baseline heads need {y.shape[1]} heads over a subset of the target's vocabulary")
    ids = heads.vocab_ids.long()
    return accuracy(heads, lm_head.index_select(0, ids).float(), Data(x, to_subset(y, ids, lm_head.shape[0]),
                                                                      torch.ones(y.shape)))


def _fit(model, rows, data: Data, val: Data, steps: int, batch: int, lr: float, seed: int, log,
         checkpoint=None) -> tuple[float, int]:
    """Every EVAL_EVERY steps EVAL_POSITIONS of the kept-out positions, spread evenly, score the heads by the
    expected accepted length of a CPU-sized tree; the best state is kept (later steps can overfit)."""
    pick = torch.linspace(0, len(val.x) - 1, min(len(val.x), EVAL_POSITIONS)).long()
    val = Data(val.x[pick], val.y[pick], val.w[pick])
    weights = torch.tensor([0.8**k for k in range(model.num_heads)])  # later heads count less (paper)

    def loss(_step: int, gen) -> torch.Tensor:
        idx = torch.randint(len(data.x), (batch,), generator=gen)
        logits = model.logits(data.x[idx].float(), rows)  # (K, B, V')
        y, w = data.y[idx].T, data.w[idx].T  # (K, B)
        w = torch.where(y >= 0, w, 0.0)  # no target, or one outside the subset: skipped
        ce = F.cross_entropy(logits.flatten(0, 1), y.clamp(min=0).flatten(), reduction="none")
        per_head = (ce.view_as(w) * w).sum(1) / w.sum(1).clamp(min=1e-6)
        return (weights * per_head).sum() / weights.sum()

    plan = Plan(steps, lr, weight_decay=0.01, clip=None, every=EVAL_EVERY, seed=seed, checkpoint=checkpoint)
    res = fit(model, loss, plan, lambda: best_tree(accuracy(model, rows, val), 12)[1], log, name="medusa")
    return res.recent(), res.best_step


@torch.no_grad()
def accuracy(model, rows, data: Data, chunk: int = 2048) -> list[list[float]]:
    """acc[k][r]: share of held-out positions where head k+1's rank-r token is the right one
    (positions whose token is outside the subset count as misses)."""
    hits = torch.zeros(model.num_heads, TOP)
    count = torch.zeros(model.num_heads)
    for i in range(0, len(data.x), chunk):
        top = model.logits(data.x[i : i + chunk].float(), rows).topk(TOP, dim=-1).indices  # (K, B, TOP)
        y = data.y[i : i + chunk].T  # (K, B)
        hits += ((top == y[..., None]) & (y >= 0)[..., None]).sum(1).float()
        count += (y != -1).sum(1).float()  # a token outside the subset (-2) is a miss
    return [[round(float(h), 4) for h in row] for row in hits / count.clamp(min=1)[:, None]]


def best_tree(acc: list[list[float]], size: int) -> tuple[list[list[int]], float]:
    """Grow a tree of `size` nodes greedily by the chance of reaching each node, taking
    heads as independent (as Medusa's own tree search does): a path's value is the
    product of acc[head][rank] along it. -> (paths, expected accepted drafts per step)."""
    chosen: list[tuple[int, ...]] = []
    value = {(): 1.0}
    frontier = {(r,): acc[0][r] for r in range(len(acc[0]))}
    while len(chosen) < size and frontier:
        node = max(frontier, key=lambda n: (frontier[n], [-r for r in n]))
        value[node] = frontier.pop(node)
        chosen.append(node)
        if len(node) < len(acc):  # its children become candidates
            frontier.update({(*node, r): value[node] * a for r, a in enumerate(acc[len(node)])})
    return [list(n) for n in chosen], sum(value[n] for n in chosen)


# ---------------------------------------------------------------- the command and its card

VERIFY_SIZES = (1, 3, 4, 5, 6, 7, 8, 12, 13, 16, 24, 32)  # tokens in one verify pass (pending token + nodes)
FORWARD_COST = ASSETS / "traces" / "forward_cost.json"


def recorded_verify_ms() -> dict[int, float]:
    """ms of one embedded-model verify pass over n tokens through the fast CPU forward every run decodes with,
    as recorded on a quiet machine (forward_cost.json, 2 threads). The tree is sized with these unless
    --measure asks for a fresh measurement (on a busy machine the other processes dominate)."""
    cost = json.loads(FORWARD_COST.read_text())
    return {n: round(ms, 1) for n, ms in zip(cost["tokens"], cost["curves"]["paradec"]["median_ms"])}


def verify_ms(decoder, context: int = 200, sizes=VERIFY_SIZES, repeats: int = 7) -> dict[int, float]:
    """Median ms of one verify pass over n new tokens after a `context`-token cache, through the forward runs
    decode with (a Loaded's decoder)."""
    from ..core.verify import pass_ms

    times = pass_ms({"paradec": decoder}, list(range(1, context + 1)), sizes, repeats)["paradec"]
    return {n: round(sorted(v)[len(v) // 2], 1) for n, v in times.items()}


def choose_tree(acc, cost: dict[int, float]) -> tuple[list[list[int]], list[dict]]:
    """The tree size with the most expected tokens per millisecond: (1 + expected accepted
    drafts) / time of a verify pass over the pending token and the nodes."""
    table = []
    for n in (s - 1 for s in sorted(cost) if s > 1):
        paths, accepted = best_tree(acc, n)
        table.append({"nodes": n, "expected_tau": round(1 + accepted, 3), "verify_ms": cost[n + 1],
                      "tokens_per_s": round((1 + accepted) / cost[n + 1] * 1e3, 1), "paths": paths})
    best = max(table, key=lambda r: r["tokens_per_s"])
    return best["paths"], table


def _before(stats: dict, args) -> str:
    """The baseline heads' top-1 per head on the same kept-out positions, when a baseline was given."""
    if "before" not in stats:
        return ""
    tops = ", ".join(f"{a[0]:.3f}" for a in stats["before"])
    return f"\nThe heads in `{args.baseline}` (before this run), on the same positions: top-1 per head {tops}.\n"


def card(stats: dict, table: list[dict], paths, args, target: str, seconds: float, command: str) -> str:
    acc = stats["accuracy"]
    rows = "\n".join(f"| {k + 1} | " + " | ".join(f"{a:.3f}" for a in acc[k][:5]) + f" | {sum(acc[k][:5]):.3f} |"
                     for k in range(len(acc)))
    sizes = "\n".join(f"| {r['nodes']} | {r['verify_ms']} | {r['expected_tau']} | {r['tokens_per_s']} |" for r in table)
    return f"""# Medusa-1 heads for {target}

{args.heads} heads, each {args.layers} residual block(s) h + SiLU(W h + b) on the target's final normed hidden
state, feeding the target's own LM head restricted to the {stats['vocab']} tokens most frequent in its answers
(V'; {stats['coverage']:.1%} of the answer tokens). Head k on position t predicts the token at t + 1 + k.
The target stays frozen. Load with `--method medusa` (the default heads) or `--set heads=DIR`.

- Command: `{command}`
- Data: self-distillation shards in {learned_from(args)} (the target's own {
  "greedy and sampled" if args.sampled else "greedy"} answers to the training prompts;
  Spec-Bench's held-out split never enters), {stats['train_positions']} training positions (answer tokens{
  f", and the prompts' own tokens at loss weight {args.prompt_weight}" if args.prompt_weight else ""}),
  {stats['val_positions']} answer positions kept out (every {VALIDATION_EVERY}th prompt's) for the accuracies below.
- Training: {args.steps} steps of {args.batch} positions, AdamW (lr {args.lr}, weight decay 0.01, warm-up then cosine),
  loss weights 0.8^k per head, seed {args.seed}, {seconds:.0f} s on this machine's CPU; \
final loss {stats['final_loss']}.
  Every {EVAL_EVERY} steps {EVAL_POSITIONS} of the kept-out positions scored the heads (expected accepted drafts
  of a 12-node tree); the best state, after step {stats['kept_step']}, is the one shipped. All kept-out positions
  give the accuracies below and grow the tree, so those numbers are a little optimistic: the benchmark below is
  the independent measure.

## Top-k accuracy on the kept-out sequences

| head | top-1 | top-2 | top-3 | top-4 | top-5 | top-5 total |
|---|---|---|---|---|---|---|
{rows}
{_before(stats, args)}
## The default tree

Grown greedily by the chance of reaching each node (heads taken as independent, as Medusa's own tree
search does), for each size, then sized by the time of a verify pass over the pending token plus the
nodes ({"measured by this command after a 200-token context" if args.measure else
"recorded on this 2-core CPU while quiet, assets/traces/forward_cost.json"}: one target forward, 2 threads).
A pass costs more with every block of rows it adds (see verify ms), so the best trade is a small tree:

| nodes | verify ms | expected τ | expected tokens/s |
|---|---|---|---|
{sizes}

Chosen ({len(paths)} nodes): `{json.dumps(paths)}`
"""


def add_parser(sub) -> None:
    from ..drafters.medusa import SHIPPED
    t = sub.add_parser("medusa", help="train Medusa-1 heads on the self-distillation data (weights + model card)")
    add_data_args(t)
    t.add_argument("--heads", type=int, default=4)
    t.add_argument("--layers", type=int, default=1, help="residual blocks per head")
    t.add_argument("--steps", type=int, default=600)
    t.add_argument("--batch", type=int, default=512, help="positions per step")
    t.add_argument("--vocab", type=int, default=4096,
                   help="V': how many of the most frequent answer tokens the heads score")
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--prompt-weight", type=float, default=0.0,
                   help="also learn the prompts' own tokens (teacher forcing), with this loss weight (answers: 1)")
    t.add_argument("--threads", type=int, default=1, help="torch CPU threads (the machine is shared)")
    t.add_argument("--out", default=str(SHIPPED))
    t.add_argument("--model", default=None, help="the target (default: the embedded model)")
    t.add_argument("--sampled", action="store_true", help="also learn the sampled answers (default: the greedy ones "
                   "only: heads learn hard next tokens, and a sampled one is noise to a greedy head)")
    t.add_argument("--baseline", default=None, help="heads to score on the same kept-out positions (the card's "
                   "\"before\"), e.g. the shipped ones")
    t.add_argument("--measure", action="store_true", help="time the verify pass here to size the tree "
                   "(default: the table measured on the quiet 2-core machine)")


def command(args, argv) -> int:
    from pathlib import Path

    from ..drafters.medusa_heads import OURS, save
    from ..drafters.medusa_heads import load as load_heads
    from ..models import load
    from .selfdistill import shards_of

    decode_threads = torch.get_num_threads()  # what runs and bench use: the tree is sized for it
    torch.set_num_threads(args.threads)
    baseline = load_heads(args.baseline) if args.baseline else None  # first: before `out` (maybe it) is written
    target = load(args.model, "cpu", "float32")
    t0 = time.perf_counter()
    lm = target.model.get_output_embeddings().weight.detach()
    out = Path(args.out)
    heads, stats = train(shards_of(args, ("hidden",), greedy=not args.sampled), lm, args.heads, args.layers,
                         args.steps, args.vocab, args.batch, args.lr, args.seed, args.prompt_weight,
                         checkpoint=out / CHECKPOINT, baseline=baseline)
    seconds = time.perf_counter() - t0
    torch.set_num_threads(decode_threads)
    paths, table = choose_tree(stats["accuracy"], verify_ms(target.decoder) if args.measure else recorded_verify_ms())
    heads.tree, heads.target = paths, target.name
    out.mkdir(parents=True, exist_ok=True)
    save(heads, out / OURS)
    cmd = command_line(argv)
    files.write_atomic(out / "card.md", card(stats, table, paths, args, target.name, seconds, cmd))
    files.write_atomic(out / "stats.json", json.dumps({**stats, "tree_sizes": table, "seconds": round(seconds, 1)},
                                                      indent=1))
    done(out)
    print(f"medusa: {args.heads} heads, top-1 {[a[0] for a in stats['accuracy']]}, tree of {len(paths)} -> {out}",
          file=sys.stderr)
    return 0
