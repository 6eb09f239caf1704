"""Training the early-exit adapter on self-distillation data (python -m paradec.train early_exit).

The target stays frozen and is not run: the shards hold its state after the exit layer (the
low third of `fuse`, the input of layer 2) and its final normed state `hidden`. At each position
the adapter reads the exit state (causal attention over the row, as when drafting) and is trained
towards the target's soft p at the same position, cross-entropy over the V' most frequent answer
tokens scored with those rows of the target's LM head.

The card also measures the plain early exit (no adapter: final norm and LM head straight on the
state after layers 2, L/2 and L-3) from the same stored states: how agreement grows with depth."""
from __future__ import annotations

import json
import sys

import torch

from ..cpu.view import causal_mask, run_layers
from ..drafters.eagle_head import fuse_layers
from ..drafters.early_exit import Adapter
from ..traces import files
from .eagle import EVAL_EVERY, EVAL_ROWS, batch_of, lm_head_rows, split_rows
from .loop import CHECKPOINT, Plan, done, fit, spread
from .selfdistill import VALIDATION_EVERY, add_data_args, command_line, frequent_tokens, learned_from, read_manifest


def init_adapter(target, exit_layer: int, ids: torch.Tensor) -> Adapter:
    """The target's own layer `exit_layer` (the next one it would run) as the starting point."""
    adapter = Adapter(target.config, exit_layer, ids)
    adapter.layer.load_state_dict(target.model.layers[exit_layer].state_dict())
    return adapter


def logits_of(adapter, target, feats: torch.Tensor, valid: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """(B, L, V') adapter logits over the subset, from exit states (B, L, H)."""
    pos = torch.arange(feats.shape[1], device=feats.device)[None].expand(feats.shape[0], -1)
    h = run_layers([adapter.layer], target.model.rotary_emb, feats, pos,
                   causal_mask(feats.shape[1], feats.shape[1], feats, valid))
    return target.model.norm(h) @ rows.T


def loss_of(adapter, target, b: dict, rows, prompt_weight: float) -> tuple[torch.Tensor, int, int]:
    """-> (loss, agreements, counted): soft cross-entropy to the target's p at each valid position;
    agreement is counted on answer positions only (the chat template around a prompt is easy to
    guess and would flatter the number; the drafter's work is the answer)."""
    H = target.config.hidden_size
    with torch.no_grad():
        p = torch.softmax(b["final"] @ rows.T, dim=-1)
    logq = torch.log_softmax(logits_of(adapter, target, b["feats"][..., :H], b["valid"], rows), dim=-1)
    w = torch.where(b["answer"], 1.0, prompt_weight) * b["valid"]
    loss = (-(p * logq).sum(-1) * w).sum() / w.sum().clamp(min=1)
    counted = b["valid"] & b["answer"]
    agree = (logq.argmax(-1) == p.argmax(-1)) & counted
    return loss, int(agree.sum()), int(counted.sum())


@torch.no_grad()
def evaluate(adapter, target, held: list[dict], rows) -> float:
    """Held-out agreement: the adapter's argmax = the target's, over the held-out answer positions."""
    hits = total = 0
    gen = torch.Generator().manual_seed(0)
    for i in range(0, len(held), 4):
        b = batch_of(held, list(range(i, min(i + 4, len(held)))), 10**6, gen, rows.device)
        _, a, n = loss_of(adapter.eval(), target, b, rows, 1.0)
        hits, total = hits + a, total + n
    return round(hits / max(total, 1), 4)


@torch.no_grad()
def plain_exits(target, held: list[dict], rows) -> dict[int, float]:
    """Agreement of the untrained early exit (final norm + LM-head rows on the raw state) at the
    depths the shards store: layers fuse_layers(L), read at the same held-out answer positions."""
    H, depths = target.config.hidden_size, fuse_layers(target.config.num_hidden_layers)
    hits, total = [0] * len(depths), 0
    for r in held:
        a = r["answer"]
        want = (r["final"][a].float() @ rows.T).argmax(-1)
        total += len(want)
        for j in range(len(depths)):
            got = (target.model.norm(r["feats"][a, j * H : (j + 1) * H].float()) @ rows.T).argmax(-1)
            hits[j] += int((got == want).sum())
    return {d: round(h / max(total, 1), 4) for d, h in zip(depths, hits)}


def train(target, shards: list[dict], steps: int = 400, vocab: int = 4096, batch: int = 4, crop: int = 192,
          lr: float = 5e-4, seed: int = 0, prompt_weight: float = 0.5, log=None, checkpoint=None,
          baseline: tuple[str, object] | None = None):
    """-> (adapter, facts); the state with the best held-out agreement is kept. `baseline`: (its folder, an
    adapter, e.g. the shipped one), scored on the same held-out rows over its own V'."""
    torch.manual_seed(seed)
    exit_layer = fuse_layers(target.config.num_hidden_layers)[0]
    rows_, held = split_rows(shards, 3)
    ids = frequent_tokens(torch.cat([r["tokens"][r["answer"]] for r in rows_]), vocab)
    device = target.device
    adapter = init_adapter(target, exit_layer, ids).to(device)
    for p in target.parameters():  # the training process's own copy of the target: frozen
        p.requires_grad_(False)
    rows = lm_head_rows(target, ids)
    before = evaluate(adapter, target, held, rows)
    shipped = {"from": baseline[0], "agreement": evaluate(baseline[1].to(device), target, held,
                                                          lm_head_rows(target, baseline[1].ids))} if baseline else None

    def loss(_step: int, gen) -> torch.Tensor:
        b = batch_of(rows_, torch.randint(len(rows_), (batch,), generator=gen).tolist(), crop, gen, device)
        return loss_of(adapter, target, b, rows, prompt_weight)[0]

    plan = Plan(steps, lr, every=EVAL_EVERY, seed=seed, checkpoint=checkpoint)
    sample = spread(held, EVAL_ROWS)
    res = fit(adapter, loss, plan, lambda: evaluate(adapter, target, sample, rows), log, name="early_exit",
              params=list(adapter.layer.parameters()))
    facts = {"exit_layer": exit_layer, "vocab": len(ids), "steps": steps, "kept_step": res.best_step, "batch": batch,
             "crop": crop, "lr": lr, "seed": seed, "prompt_weight": prompt_weight, "rows": len(rows_),
             "heldout_rows": len(held), "seconds": round(res.seconds),
             "device": "the CPU" if device.type == "cpu" else str(device), "before": before,
             "after": evaluate(adapter, target, held, rows),
             "plain_exit": plain_exits(target, held, rows), "layers": target.config.num_hidden_layers}
    return adapter, facts | ({"baseline": shipped} if shipped else {})


# ---------------------------------------------------------------- the command and its card
def add_parser(sub) -> None:
    from ..drafters.early_exit import SHIPPED
    t = sub.add_parser("early_exit", help="train the early-exit adapter on the self-distillation data (weights + card)")
    add_data_args(t)
    t.add_argument("--steps", type=int, default=400)
    t.add_argument("--vocab", type=int, default=4096, help="V': the draft vocabulary (most frequent answer tokens)")
    t.add_argument("--batch", type=int, default=4, help="rows per step")
    t.add_argument("--crop", type=int, default=192, help="tokens per row per step")
    t.add_argument("--lr", type=float, default=5e-4)
    t.add_argument("--prompt-weight", type=float, default=0.5)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--out", default=str(SHIPPED))
    t.add_argument("--model", default=None)
    t.add_argument("--baseline", default=None, help="an adapter to score on the same held-out rows (the card's "
                   "\"before\"), e.g. the shipped one")


def command(args, argv) -> int:
    from pathlib import Path

    from ..drafters.early_exit import STATS, save
    from ..drafters.early_exit import load as load_adapter
    from ..models import load
    from .selfdistill import shards_of

    torch.set_num_threads(args.threads)
    data = Path(args.data).expanduser()
    manifest = read_manifest(data)
    target = load(args.model, "cpu", "float32")
    out = Path(args.out)
    baseline = (args.baseline, load_adapter(target.model, Path(args.baseline))) if args.baseline else None
    adapter, facts = train(target.model, shards_of(args, ("hidden", "fuse")), args.steps, args.vocab, args.batch,
                           args.crop, args.lr, args.seed, args.prompt_weight, checkpoint=out / CHECKPOINT,
                           baseline=baseline)
    save(adapter, out, {"target": target.name, "trained": json.dumps(facts)})
    files.write_atomic(out / STATS, json.dumps({"target": target.name, **facts}, indent=1) + "\n")
    cmd = command_line(argv)
    shown = learned_from(args)
    files.write_atomic(out / "card.md", card(facts, shown, manifest, target.name, cmd))
    done(out)
    print(f"early_exit: held-out agreement {facts['before']} -> {facts['after']} -> {out}", file=sys.stderr)
    return 0


def card(facts: dict, data: str, manifest: dict, target: str, command: str) -> str:
    rows = [f"| {d} of {facts['layers']} | {a:.3f} |" for d, a in facts["plain_exit"].items()]
    lines = [f"# Early-exit adapter for {target}", "",
             f"One Llama decoder layer of the target's width, run after the target's own first {facts['exit_layer']} "
             f"layers; then the target's final norm and its LM-head rows for the {facts['vocab']} most frequent answer "
             "tokens (not stored). Weights float16, safetensors; the numbers below are also in stats.json.", "",
             "## Training",
             f"- command: `{command}`",
             f"- data: {data} (self-distillation: the target's own answers; {manifest}); "
             f"{facts['rows']} training rows, {facts['heldout_rows']} held out (every {VALIDATION_EVERY}th prompt)",
             f"- input: the target's state after layer {facts['exit_layer']} at each position "
             "(causal attention over the row); target: the target's soft p at the same position over V' "
             f"(cross-entropy); answer positions weight 1, prompt positions {facts['prompt_weight']}",
             f"- init: the target's layer {facts['exit_layer']} (the next one it would run)",
             f"- steps: {facts['steps']} (batch {facts['batch']} rows x {facts['crop']} tokens), "
             f"AdamW lr {facts['lr']} (warm-up, cosine), seed {facts['seed']}; kept step {facts['kept_step']} "
             "(best held-out agreement)",
             f"- time: {facts['seconds']} s on {facts['device']}", "",
             "## Held-out agreement (draft argmax = target argmax over V', on the held-out rows' answer positions)",
             f"- with the adapter at exit layer {facts['exit_layer']}: {facts['before']:.3f} before training "
             f"(the target's next layer, then straight to the head), {facts['after']:.3f} after"
             + (f"; the adapter in `{facts['baseline']['from']}` (before this run): "
                f"{facts['baseline']['agreement']:.3f}" if "baseline" in facts else ""), "",
             "## The plain early exit (no adapter: final norm and LM-head rows on the raw state)",
             "| layers before the exit | agreement |", "|---|---|", *rows]
    return "\n".join(lines) + "\n"
