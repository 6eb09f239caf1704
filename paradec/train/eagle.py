"""Training EAGLE heads on self-distillation data (python -m paradec.train eagle).

The target stays frozen: its features come from the shards. Entry t of a row reads
(feature_t, token_{t+1}); its output is trained towards the target's next feature f_{t+1}
(EAGLE-1: smooth-L1 regression, weight 1) and its draft distribution towards the target's
p at t + 1 (cross-entropy against the soft p, over the V' most frequent answer tokens;
EAGLE-1 weight 0.1, EAGLE-3 the whole loss).

EAGLE-3's training-time test: after the first pass the head is unrolled `ttt` times on its
own outputs, as it drafts: step j at origin t reads (its step j-1 output, token_{t+j}) at
position t + j - 1 and attends to the true-feature entries up to t (step 1's keys) and to
its own earlier steps at the same origin (the diagonal of each earlier step's keys). A head of
several decoder layers (`--layers`) does so in every layer, each over its own keys."""
from __future__ import annotations

import sys

import torch
import torch.nn.functional as F

from ..drafters.eagle_head import EagleHead
from ..traces import files
from .loop import CHECKPOINT, Plan, done, fit, spread, to_stderr
from .selfdistill import (
    VALIDATION_EVERY,
    add_data_args,
    command_line,
    frequent_tokens,
    learned_from,
    read_manifest,
    validation,
)

EVAL_EVERY = 100
EVAL_ROWS = 64  # held-out rows scored during training (all of them before and after)


def split_rows(shards: list[dict], version: int) -> tuple[list[dict], list[dict]]:
    """(training rows, held-out rows), one dict per sequence with its left padding removed: tokens (L,),
    answer (L,), feats (L, F), final (L, H). Empties `shards` as it goes: a shard's padded features are freed
    once its rows are copied out, so memory peaks near the data's size, not twice it (~13 GB at 700k
    answer tokens with EAGLE-3's fused features)."""
    rows, held = [], []
    while shards:
        s = shards.pop(0)
        for r in range(s["tokens"].shape[0]):
            m = s["mask"][r]
            final = s["hidden"][r][m]  # a boolean index copies
            (held if validation(int(s["prompt"][r])) else rows).append(
                {"tokens": s["tokens"][r][m].long(), "answer": s["answer"][r][m], "final": final,
                 "feats": s["fuse"][r][m] if version == 3 else final})
    return rows, held


def init_head(target, version: int, ids: torch.Tensor, layers: int = 1) -> EagleHead:
    """fc passes the (high) feature through and every layer's output projections start at zero,
    so the untrained head is the identity on features; EAGLE-3's norm and LM head start as the
    target's final norm and its LM-head rows for the subset."""
    cfg, H = target.config, target.config.hidden_size
    head = EagleHead(cfg, version, ids, layers)
    with torch.no_grad():
        head.fc.weight.zero_()
        head.fc.weight[:, -H:] = torch.eye(H)
        if head.fc.bias is not None:
            head.fc.bias.zero_()
        for layer in head.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        if version == 3:
            head.norm.weight.copy_(target.model.norm.weight)
            head.lm_head.weight.copy_(target.get_output_embeddings().weight[ids])
    return head


def batch_of(rows: list[dict], idx: list[int], crop: int, gen, device="cpu") -> dict:
    """Rows cropped to `crop` tokens at a random start, right-padded: tensors (B, L, ...) and a valid mask."""
    picked = []
    for i in idx:
        r = rows[i]
        start = int(torch.randint(max(1, len(r["tokens"]) - crop + 1), (1,), generator=gen))
        picked.append({k: v[start : start + crop] for k, v in r.items()})
    L = max(len(r["tokens"]) for r in picked)

    def pad(key, fill=0):
        return torch.stack([F.pad(r[key], (0, 0) * (r[key].dim() - 1) + (0, L - len(r[key])), value=fill)
                            for r in picked])

    valid = torch.stack([torch.arange(L) < len(r["tokens"]) for r in picked])
    out = {"tokens": pad("tokens"), "answer": pad("answer", False), "feats": pad("feats").float(),
           "final": pad("final").float(), "valid": valid}
    return {k: v.to(device) for k, v in out.items()}


def loss_of(head, b: dict, embed, rows, steps: int, prompt_weight: float,
            noise: float = 0.0) -> tuple[torch.Tensor, list]:
    """The unrolled loss of one batch -> (loss, per-step (agreements, counts)). rows: LM-head
    rows (V', H) for the soft targets (and EAGLE-1's draft logits)."""
    tok, valid, final = b["tokens"], b["valid"], b["final"]
    B, L = tok.shape
    feats = b["feats"][:, :-1] + noise * torch.randn_like(b["feats"][:, :-1]) if noise else b["feats"][:, :-1]
    dev = tok.device
    pos = torch.arange(L - 1, device=dev)[None].expand(B, -1)
    causal = torch.ones(L - 1, L - 1, dtype=torch.bool, device=dev).tril()[None, None] & valid[:, None, None, :-1]
    diag = torch.eye(L - 1, dtype=torch.bool, device=dev)[None, None].expand(B, 1, -1, -1)
    h, kvs, total, stats = feats, [], 0.0, []
    for j in range(1, steps + 1):  # step j at origin t reads token t + j, predicts the target's p at t + j
        n = L - j  # origins with a token t + j
        with torch.no_grad():  # the target's embeddings are frozen
            emb = embed(tok[:, j:])
        mask = torch.cat([diag[..., :n, :n], causal[..., :n, :]] + [d[..., :n, :n] for d in [diag] * (j - 2)], dim=-1)
        rec = []  # this step's (k, v) of every layer
        out = head(h[:, :n], emb, pos[:, :n] + j - 1, mask if j > 1 else causal[..., :n, :n],
                   extra_kv=_earlier(kvs, n), record=rec)
        kvs.append(rec)
        target = final[:, j:]  # f at t + j: its LM-head row scores are the target's p there
        ok = valid[:, j:] & valid[:, :n]
        w = torch.where(b["answer"][:, j:], 1.0, prompt_weight) * ok
        p = torch.softmax(target @ rows.T, dim=-1)
        logq = torch.log_softmax(head.logits(out, rows).float(), dim=-1)
        ce = -(p * logq).sum(-1)
        loss = (ce * w).sum() / w.sum().clamp(min=1)
        if head.version == 1:  # EAGLE-1 regresses the feature, the token loss weighs 0.1
            reg = F.smooth_l1_loss(out, target, reduction="none").mean(-1)
            loss = (reg * w).sum() / w.sum().clamp(min=1) + 0.1 * loss
        total = total + loss * (0.8 ** (j - 1))
        agree = (logq.argmax(-1) == p.argmax(-1)) & ok
        stats.append((int(agree.sum()), int(ok.sum())))
        h = out
    return total, stats


def _earlier(kvs: list[list], n: int) -> list[list] | None:
    """The earlier steps' per-layer (k, v) as step j attends to them: step 1's whole (the context, causal),
    the later ones' first n (their diagonal: origin t's own chain)."""
    return [[(k[:, :, :n], v[:, :, :n]) if s else (k, v) for k, v in step] for s, step in enumerate(kvs)] or None


def train(target, shards: list[dict], version: int, steps: int = 600, vocab: int = 4096, ttt: int = 3,
          batch: int = 4, crop: int = 192, lr: float = 1e-3, seed: int = 0, prompt_weight: float = 0.5,
          checkpoint=None, log=None, baseline: tuple[str, EagleHead] | None = None, layers: int = 1):
    """-> (head, facts). The held-out agreement (draft argmax = target argmax, per unrolled step, summed)
    is measured every EVAL_EVERY steps on up to EVAL_ROWS held-out rows, and the best state kept.
    `baseline`: (its folder, a head of the same version, e.g. the shipped one), scored on the same rows;
    `layers`: the head's decoder layers."""
    torch.manual_seed(seed)
    unroll = ttt if version == 3 else 1
    rows, held = split_rows(shards, version)
    ids = frequent_tokens(torch.cat([r["tokens"][r["answer"]] for r in rows]), vocab)
    device = target.device
    head = init_head(target, version, ids.to(device), layers).to(device)
    lm_rows = lm_head_rows(target, ids)
    embed = target.get_input_embeddings()
    before = evaluate(head, held, embed, lm_rows, max(unroll, 3))
    shipped = {"from": baseline[0], "agreement": baseline_agreement(target, baseline[1], held, max(unroll, 3))
               } if baseline else None

    def loss(_step: int, gen) -> torch.Tensor:
        with torch.no_grad():
            b = batch_of(rows, torch.randint(len(rows), (batch,), generator=gen).tolist(), crop, gen, device)
        return loss_of(head, b, embed, lm_rows, unroll, prompt_weight, noise=0.05 if version == 1 else 0.0)[0]

    plan = Plan(steps, lr, warmup=30, every=EVAL_EVERY, seed=seed, checkpoint=checkpoint)
    sample = spread(held, EVAL_ROWS)
    if baseline:  # in the units of the held-out score logged while training, to watch the new head pass it
        score = sum(baseline_agreement(target, baseline[1], sample, max(unroll, 3)))
        (log or to_stderr)(f"eagle{version}: {baseline[0]} scores {score:.4f} held-out")
    res = fit(head, loss, plan, lambda: sum(evaluate(head, sample, embed, lm_rows, max(unroll, 3))), log,
              name=f"eagle{version}")
    facts = {"version": version, "layers": layers, "vocab": len(ids), "steps": steps, "kept_step": res.best_step,
             "ttt": unroll, "batch": batch, "crop": crop, "lr": lr, "seed": seed, "prompt_weight": prompt_weight,
             "rows": len(rows), "heldout_rows": len(held),
             "answer_tokens": int(sum(int(r["answer"].sum()) for r in rows)), "seconds": round(res.seconds),
             "device": "the CPU" if device.type == "cpu" else str(device),
             "before": before, "after": evaluate(head, held, embed, lm_rows, max(unroll, 3))}
    return head, facts | ({"baseline": shipped} if shipped else {})


def baseline_agreement(target, head: EagleHead, held: list[dict], steps: int) -> list[float]:
    """Another head's held-out agreement (e.g. the shipped one's), over its own V', on the same rows."""
    return evaluate(head.to(target.device), held, target.get_input_embeddings(), lm_head_rows(target, head.vocab_ids),
                    steps)


def lm_head_rows(target, ids: torch.Tensor) -> torch.Tensor:
    """(V', H) float32: the target's LM-head rows of a draft vocabulary, frozen (the soft targets' scorer)."""
    return target.get_output_embeddings().weight[ids.to(target.device)].detach().float()


@torch.no_grad()
def evaluate(head, held: list[dict], embed, rows, steps: int) -> list[float]:
    """Held-out agreement per unrolled step (teacher-forced context, the head's own outputs after)."""
    hits = [[0, 0] for _ in range(steps)]
    gen = torch.Generator().manual_seed(0)
    for i in range(0, len(held), 4):
        b = batch_of(held, list(range(i, min(i + 4, len(held)))), 10**6, gen, rows.device)
        for j, (a, n) in enumerate(loss_of(head.eval(), b, embed, rows, steps, 1.0)[1]):
            hits[j][0] += a
            hits[j][1] += n
    return [round(a / max(n, 1), 4) for a, n in hits]


# ---------------------------------------------------------------- the command and its card
def add_parser(sub) -> None:
    from ..drafters.eagle import SHIPPED
    t = sub.add_parser("eagle", help="train an EAGLE-1 or EAGLE-3 head on the self-distillation data (weights + card)")
    t.add_argument("--version", type=int, choices=(1, 3), default=3)
    add_data_args(t)
    t.add_argument("--steps", type=int, default=600)
    t.add_argument("--vocab", type=int, default=4096, help="V': the draft vocabulary (most frequent answer tokens)")
    t.add_argument("--layers", type=int, default=1, help="decoder layers in the head (the official heads: 1)")
    t.add_argument("--ttt", type=int, default=3, help="EAGLE-3: unrolled steps of training-time test")
    t.add_argument("--batch", type=int, default=4, help="rows per step")
    t.add_argument("--crop", type=int, default=192, help="tokens per row per step")
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--prompt-weight", type=float, default=0.5)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--device", default=None, help="cpu, cuda, ... (default: a GPU when there is one)")
    t.add_argument("--out", default="", help=f"default: {SHIPPED[1]} or {SHIPPED[3]}")
    t.add_argument("--model", default=None)
    t.add_argument("--baseline", default=None, help="a head of the same version to score on the same held-out rows "
                   "(the card's \"before\"), e.g. the shipped one")


def command(args, argv) -> int:
    from pathlib import Path

    from ..drafters import eagle_head
    from ..drafters.eagle import SHIPPED
    from ..models import load
    from .selfdistill import shards_of

    torch.set_num_threads(args.threads)
    data = Path(args.data).expanduser()
    manifest = read_manifest(data)
    baseline = (args.baseline, eagle_head.load(args.baseline)[0]) if args.baseline else None  # first: fail fast
    if baseline and baseline[1].version != args.version:
        raise ValueError(f"--baseline {args.baseline} is an EAGLE-{baseline[1].version} head, not EAGLE-{args.version}")
    target = load(args.model, args.device, "float32")  # float32 even on a GPU: the head is small
    shards = shards_of(args, ("hidden", "fuse") if args.version == 3 else ("hidden",))
    out = Path(args.out or SHIPPED[args.version])
    head, facts = train(target.model, shards, args.version, args.steps, args.vocab, args.ttt, args.batch, args.crop,
                        args.lr, args.seed, args.prompt_weight, out / CHECKPOINT, baseline=baseline, layers=args.layers)
    eagle_head.save(head.cpu(), out, target.model.config, {"target": target.name, "trained": facts})
    cmd = command_line(argv)
    shown = learned_from(args)
    files.write_atomic(out / "card.md", card(facts, shown, manifest, target.name, cmd))
    done(out)
    print(f"eagle{args.version}: held-out agreement {facts['after']} -> {out}", file=sys.stderr)
    return 0


def card(facts: dict, data: str, manifest: dict, target: str, command: str) -> str:
    v = facts["version"]
    depth = "one Llama decoder layer" if facts["layers"] == 1 else f"{facts['layers']} Llama decoder layers"
    what = (f"fc over [embedding, final feature] (2H -> H) and {depth}; it scores the "
            f"{facts['vocab']} most frequent answer tokens with those rows of the target's LM head (not stored)"
            if v == 1 else
            f"fc fusing the target's low, middle and high layer features (3H -> H), {depth} (the first over "
            f"[norm(embedding), norm(feature)]), a final norm and its own LM head over a {facts['vocab']}-token draft "
            "vocabulary (vocab_ids: draft id -> target id)")
    loss = ("smooth-L1 to the target's next feature + 0.1 x cross-entropy to the target's soft p (over V')"
            if v == 1 else
            f"cross-entropy to the target's soft p over V', unrolled {facts['ttt']} steps on the head's own outputs "
            "(training-time test), step j weighted 0.8^(j-1)")
    lines = [f"# EAGLE-{v} head for {target}", "", what + ". Weights float16, safetensors.", "", "## Training",
             f"- command: `{command}`",
             f"- data: {data} (self-distillation: the target's own answers; {manifest}); {facts['rows']} training rows "
             f"({facts['answer_tokens']} answer tokens), {facts['heldout_rows']} rows held out "
             f"(every {VALIDATION_EVERY}th prompt); "
             "no Spec-Bench held-out prompt (question_id % 4 == 1, the ones `bench --split heldout` runs) "
             "is in the data",
             f"- loss: {loss}; answer positions weight 1, prompt positions {facts['prompt_weight']}",
             "- init: fc passes the feature through, every layer's output projections at zero (the identity)"
             + ("; norm and LM head from the target's" if v == 3 else ""),
             f"- steps: {facts['steps']} (batch {facts['batch']} rows x {facts['crop']} tokens), "
             f"AdamW lr {facts['lr']} (warm-up, cosine), seed {facts['seed']}; "
             f"kept the state of step {facts['kept_step']} "
             f"(best held-out agreement on up to {EVAL_ROWS} held-out rows)",
             f"- time: {facts['seconds']} s on {facts['device']}", "",
             "## Held-out agreement (draft argmax = target argmax; step 1 on the target's features, "
             "steps 2-3 on the head's own)",
             "| | step 1 | step 2 | step 3 |", "|---|---|---|---|",
             *([f"| the head in `{facts['baseline']['from']}`, before this run | "
                + " | ".join(f"{a:.3f}" for a in facts["baseline"]["agreement"][:3]) + " |"]
               if "baseline" in facts else []),
             "| before training | " + " | ".join(f"{a:.3f}" for a in facts["before"][:3]) + " |",
             "| after training | " + " | ".join(f"{a:.3f}" for a in facts["after"][:3]) + " |"]
    return "\n".join(lines) + "\n"
