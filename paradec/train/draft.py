"""python -m paradec.train draft: distil the target into a small draft model for sps.

The draft (paradec.models.draft_model) starts from the target's first layers and final norm and
learns, with teacher forcing over the self-distillation data, to match the target's
distribution p at every position: cross-entropy against p itself (soft labels, computed
from the stored final hidden states and the target's LM head rows of the subset), not
just against the token the target chose. Soft labels carry far more signal per token,
which matters with a few tens of thousands of answer tokens. Answer positions (what the
draft will propose) weigh 1, prompt positions less. Only the layers and the norm learn.

Rows are stripped of their left padding and right-padded in batches, so position ids
start at 0 on each row's first real token and causal attention never sees a pad."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from ..costs.speccost import chain_tau
from ..models import load
from ..models.draft_model import ASSET, SubsetDraft, build, save
from ..models.draft_model import load as load_draft
from ..traces import files
from .loop import CHECKPOINT, Plan, done, fit
from .selfdistill import (
    VALIDATION_EVERY,
    add_data_args,
    command_line,
    frequent_tokens,
    learned_from,
    read_manifest,
    shards_of,
)


def rows_of(shards: list[dict]) -> list[dict]:
    """Each real row of every shard, padding removed: tokens (n,), answer (n,), hidden (n, H)."""
    rows = []
    for s in shards:
        for tokens, mask, answer, hidden, prompt in zip(s["tokens"], s["mask"], s["answer"], s["hidden"], s["prompt"]):
            rows.append({"tokens": tokens[mask].long(), "answer": answer[mask], "hidden": hidden[mask],
                         "prompt": int(prompt)})
    return rows


def split(rows: list[dict], every: int = VALIDATION_EVERY) -> tuple[list[dict], list[dict]]:
    """(train, held-out) by prompt: one prompt in `every` (at least one), in the order of their indices,
    so every answer to one prompt, and its follow-ups, fall on the same side."""
    key = {id(r): r["prompt"] for r in rows}
    prompts = sorted(set(key.values()))
    if len(prompts) < 2:
        raise ValueError("the draft needs data from at least two prompts (one is held out)")
    held = set(prompts[::every])
    return [r for r in rows if key[id(r)] not in held], [r for r in rows if key[id(r)] in held]


def batches(rows: list[dict], size: int) -> list[dict]:
    """Rows of similar length together (less padding), right-padded; weights mark the
    positions whose next token is real: 1 for an answer token, 0 elsewhere (set later)."""
    rows = sorted(rows, key=lambda r: len(r["tokens"]))
    out = []
    for i in range(0, len(rows), size):
        group = rows[i : i + size]
        width = max(len(r["tokens"]) for r in group)
        tokens = torch.zeros(len(group), width, dtype=torch.long)
        hidden = torch.zeros(len(group), width, group[0]["hidden"].shape[-1], dtype=group[0]["hidden"].dtype)
        nxt_answer = torch.zeros(len(group), width, dtype=torch.bool)  # the next token is an answer token
        nxt_real = torch.zeros(len(group), width, dtype=torch.bool)  # there is a next token
        for j, r in enumerate(group):
            n = len(r["tokens"])
            tokens[j, :n], hidden[j, :n] = r["tokens"], r["hidden"]
            nxt_answer[j, : n - 1] = r["answer"][1:]
            nxt_real[j, : n - 1] = True
        out.append({"tokens": tokens, "hidden": hidden, "next_answer": nxt_answer, "next_real": nxt_real})
    return out


def loss_of(draft: SubsetDraft, batch: dict, prompt_weight: float) -> torch.Tensor:
    """Cross-entropy of q against the target's p over the subset (p renormalised there:
    the best any q on the subset can do), weighted per position."""
    log_q = torch.log_softmax(draft.subset_logits(batch["tokens"]), dim=-1)
    with torch.no_grad():
        p = torch.softmax(batch["hidden"].to(draft.head.dtype) @ draft.head.T, dim=-1)
    w = batch["next_answer"] + prompt_weight * (batch["next_real"] & ~batch["next_answer"])
    return ((p * log_q).sum(-1).neg() * w).sum() / w.sum()


@torch.no_grad()
def agreement(draft: SubsetDraft, rows: list[dict]) -> dict:
    """On held-out rows, at answer positions: how often the draft's greedy token is the
    target's greedy token (the per-token acceptance α of greedy sps), and how often the
    target's token is in the subset at all (α's ceiling)."""
    draft.eval()
    hits = covered = total = 0
    lm_head = draft.full.lm_head.weight
    in_subset = torch.zeros(draft.config.vocab_size, dtype=torch.bool)
    in_subset[draft.subset.ids.cpu()] = True
    for b in batches(rows, 8):
        pos = b["next_answer"]
        want = (b["hidden"][pos].to(lm_head.dtype) @ lm_head.T).argmax(-1)
        got = draft.subset.ids[draft.subset_logits(b["tokens"])[pos].argmax(-1)]
        hits += int((got == want).sum())
        covered += int(in_subset[want].sum())
        total += int(pos.sum())
    return {"alpha": hits / max(1, total), "coverage": covered / max(1, total), "tokens": total}


def train(target_model, shards: list[dict], layers: int, vocab: int, steps: int, seed: int = 0, batch: int = 8,
          lr: float = 5e-4, prompt_weight: float = 0.3, checkpoint: Path | None = None,
          baseline: SubsetDraft | None = None) -> tuple[SubsetDraft, dict]:
    """Train a draft; returns it (in eval mode, at its best held-out α) and the facts its model card reports
    (with `baseline`, e.g. the shipped draft, its α on the same held-out rows too)."""
    torch.manual_seed(seed)
    train_rows, held = split(rows_of(shards))
    shipped = agreement(baseline, held) if baseline is not None else None
    ids = frequent_tokens(torch.cat([r["tokens"][r["answer"]] for r in train_rows]), vocab)  # what the target writes
    draft = build(target_model, layers, ids)
    before = agreement(draft, held)
    data = batches(train_rows, batch)

    def loss(step: int, _gen) -> torch.Tensor:  # each epoch visits every batch once, in a seeded order
        order = torch.randperm(len(data), generator=torch.Generator().manual_seed(seed * 7919 + step // len(data)))
        return loss_of(draft, data[int(order[step % len(data)])], prompt_weight)

    plan = Plan(steps, lr, weight_decay=0.01, warmup=max(1, steps // 20), every=100, seed=seed, checkpoint=checkpoint)
    res = fit(draft, loss, plan, lambda: agreement(draft, held)["alpha"], name="draft")
    facts = {"layers": layers, "vocab": len(ids), "steps": steps, "kept_step": res.best_step, "seed": seed,
             "batch": batch, "lr": lr, "prompt_weight": prompt_weight, "rows": len(train_rows),
             "heldout_rows": len(held), "answer_tokens": int(sum(int(r["answer"].sum()) for r in train_rows)),
             "epochs": round(steps / len(data), 2), "final_loss": res.recent(),
             "seconds": round(res.seconds), "before": before, "after": agreement(draft, held)}
    return draft, facts | ({"baseline": shipped} if shipped else {})


def card(facts: dict, data: str, manifest: dict, target: str, command: str, baseline: str = "") -> str:
    """The model card: what the draft was trained on, how, and what it reaches on held-out rows."""
    before, after = facts["before"], facts["after"]
    lines = [
        "# sps draft model for " + target,
        "",
        f"{facts['layers']} Llama decoder layer(s) of the target's width, reading the target's own embeddings and "
        f"scoring the {facts['vocab']} tokens the target writes most often with those rows of its LM head "
        "(both shared at load time, not stored here). Weights: the layers, the final norm and the subset ids, float16.",
        "",
        "## Training",
        f"- command: `{command}`",
        f"- data: {data} (self-distillation: the target's own answers; {manifest}), "
        f"{facts['rows']} training rows with {facts['answer_tokens']} answer tokens; "
        f"{facts['heldout_rows']} rows held out by prompt",
        "- loss: cross-entropy against the target's p over the subset; answer positions weight 1, "
        f"prompt positions {facts['prompt_weight']}",
        f"- init: the target's first {facts['layers']} layer(s) and final norm",
        f"- steps: {facts['steps']} (batch {facts['batch']} rows, {facts['epochs']} epochs), AdamW lr {facts['lr']} "
        f"(warm-up, cosine), seed {facts['seed']}; kept step {facts['kept_step']} (best held-out α)",
        f"- time: {facts['seconds']} s on the CPU; final loss {facts['final_loss']:.3f}",
    ]
    if after:
        lines += [
            "",
            f"## Held-out rows ({after['tokens']} answer tokens, teacher-forced)",
            "| | α (draft greedy token = target's) | target token in the subset | τ for k = 4 (i.i.d. estimate) |",
            "|---|---|---|---|",
            *([f"| the draft in `{baseline}`, before this run | {facts['baseline']['alpha']:.3f} | "
               f"{facts['baseline']['coverage']:.3f} | {chain_tau(facts['baseline']['alpha'], 4):.2f} |"]
              if "baseline" in facts else []),
            f"| before training | {before['alpha']:.3f} | {before['coverage']:.3f} | "
            f"{chain_tau(before['alpha'], 4):.2f} |",
            f"| after training | {after['alpha']:.3f} | {after['coverage']:.3f} | {chain_tau(after['alpha'], 4):.2f} |",
        ]
    return "\n".join(lines) + "\n"


def add_parser(sub) -> None:
    t = sub.add_parser("draft", help="distil the target into a small draft model for sps (weights + model card)")
    add_data_args(t)
    t.add_argument("--layers", type=int, default=1)
    t.add_argument("--vocab", type=int, default=4096, help="V': how many of the most frequent answer tokens q scores")
    t.add_argument("--steps", type=int, default=300)
    t.add_argument("--batch", type=int, default=8, help="rows per step")
    t.add_argument("--lr", type=float, default=5e-4)
    t.add_argument("--prompt-weight", type=float, default=0.3, help="loss weight of prompt positions (answers: 1)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--threads", type=int, default=1, help="torch CPU threads (the machine is shared)")
    t.add_argument("--out", default=str(ASSET))
    t.add_argument("--model", default=None, help="the target (default: the embedded model)")
    t.add_argument("--baseline", default=None, help="a trained draft to score on the same held-out rows (the card's "
                   "\"before\"), e.g. the shipped one")


def command(args, argv) -> int:
    """python -m paradec.train draft: train, then write the weights and the model card."""
    torch.set_num_threads(args.threads)
    data = Path(args.data).expanduser()
    manifest = read_manifest(data)
    target = load(args.model, "cpu", "float32")
    baseline = load_draft(target.model, Path(args.baseline)) if args.baseline else None  # before the shards: fail fast
    shards = shards_of(args, ("hidden",))
    out = Path(args.out)
    draft, facts = train(target.model, shards, args.layers, args.vocab, args.steps, args.seed, args.batch, args.lr,
                         args.prompt_weight, out / CHECKPOINT, baseline)
    save(draft, out, {"target": target.name, "steps": args.steps, "seed": args.seed})
    cmd = command_line(argv)
    shown = learned_from(args)
    files.write_atomic(out / "card.md", card(facts, shown, manifest, target.name, cmd, args.baseline or ""))
    files.write_atomic(out / "stats.json", json.dumps({"target": target.name, **facts}, indent=1) + "\n")  # pages
    done(out)
    print(f"draft: {facts['layers']} layer(s), V' {facts['vocab']}, held-out α {facts['after']} -> {out}",
          file=sys.stderr)
    return 0
