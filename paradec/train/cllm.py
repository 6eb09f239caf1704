"""Consistency-trained Jacobi (CLLM, Kou et al. 2024): fine-tune the target on its own Jacobi
trajectories so that from any point of a trajectory it jumps to the fixed point
(python -m paradec.train cllm).

1. Trajectories: greedy Jacobi on the base model, CLLM's way: a block of n guesses after the
   committed text (first guesses: the last token repeated, paradec's init "repeat"), every position
   re-predicted in one pass, until the block stops changing (its fixed point: the greedy
   continuation); then the next block. Every state on the way is kept.
2. Fine-tuning: LoRA deltas (paradec.models.lora) on every projection. Consistency loss: from a state
   y(j) of a block, the model's predictions at the block's positions should be the fixed point y*
   (cross-entropy); AR loss: it keeps predicting its own greedy answer after the prompt, so that its
   output stays close to the base model's. Several states of one prompt share one packed row: each
   attends to the text committed before its block and causally to itself, at the block's positions.
3. The card: Jacobi τ (tokens per target forward) of the base and the fine-tuned model on held-out prompts."""
from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import DynamicCache

from ..models import encode_prompt, eos_ids, lora
from ..traces import files
from .loop import CHECKPOINT, Plan, done, fit


@torch.inference_mode()
def trajectory(model, prompt_ids: list[int], n: int, blocks: int, eos: set[int]) -> list[dict]:
    """Greedy Jacobi on one prompt -> per block: {'start': its first position, 'states': y(0)..y*}."""
    cache, ctx, out = DynamicCache(), list(prompt_ids), []
    if len(ctx) > 1:
        model(input_ids=torch.tensor([ctx[:-1]], device=model.device), cache=cache, use_cache=True)
    for _ in range(blocks):
        states = [[ctx[-1]] * n]
        while True:
            ids = torch.tensor([[ctx[-1]] + states[-1]], device=model.device)
            new = model(input_ids=ids, cache=cache, use_cache=True).logits[0, :n].argmax(-1).tolist()
            if new == states[-1]:  # the fixed point: keep its entries in the cache, they are committed
                cache.crop(-1)
                break
            cache.crop(-(n + 1))
            states.append(new)
        out.append({"start": len(ctx), "states": states})
        ctx += states[-1]
        if eos & set(states[-1]):
            break
    return out


def collect(target, prompts: list[str], n: int, tokens: int, max_prompt_tokens: int, limit: int, log) -> list[dict]:
    """Trajectories of the first `limit` prompts that fit: [{'prompt': ids, 'blocks': [...]}]."""
    eos, rows, t0 = eos_ids(target.tokenizer, target.model), [], time.perf_counter()
    encoded = [e for e in (encode_prompt(target.tokenizer, p) for p in prompts) if len(e) <= max_prompt_tokens][:limit]
    for i, ids in enumerate(encoded):
        rows.append({"prompt": ids, "blocks": trajectory(target.model, ids, n, tokens // n, eos)})
        log(f"cllm: trajectories {i + 1}/{len(encoded)} ({time.perf_counter() - t0:.0f} s)")
    return rows


def packed(row: dict, states: int, rng: random.Random) -> dict:
    """One training row: prompt + fixed points, then up to `states` states of every block, each
    attending to the text before its block and causally to itself, at the block's own positions."""
    seq = row["prompt"] + [t for b in row["blocks"] for t in b["states"][-1]]
    tokens, pos, spans, targets = list(seq), list(range(len(seq))), [], []
    for b in row["blocks"]:
        fixed, start = b["states"][-1], b["start"]
        pool = b["states"][:-1]  # the fixed point itself is already in seq (the AR part)
        for y in rng.sample(pool, min(states, len(pool))):
            spans.append((len(tokens), start, len(y)))
            # the prediction after guess i should be the fixed point's token i+1; after the last
            # guess, the token after the block when the answer goes on
            after = seq[start + len(y)] if start + len(y) < len(seq) else -100
            targets += fixed[1:] + [after]
            tokens += y
            pos += range(start, start + len(y))
    allowed = torch.ones(len(tokens), len(tokens), dtype=torch.bool).tril()
    for at, start, size in spans:
        allowed[at : at + size, start:at] = False  # not the answer from its own block on, nor other states
    return {"tokens": torch.tensor([tokens]), "pos": torch.tensor([pos]), "allowed": allowed, "seq": len(seq),
            "prompt": len(row["prompt"]), "targets": torch.tensor(targets, dtype=torch.long)}


def loss_of(model, p: dict, ar_weight: float) -> tuple[torch.Tensor, float, float]:
    """-> (loss, consistency loss, AR loss) on one packed row."""
    dtype = next(model.parameters()).dtype
    mask = torch.zeros(p["allowed"].shape, dtype=dtype).masked_fill(~p["allowed"], torch.finfo(dtype).min)
    dev = model.device
    logits = model(input_ids=p["tokens"].to(dev), position_ids=p["pos"].to(dev),
                   attention_mask=mask[None, None].to(dev)).logits[0]
    seq, first = p["seq"], p["prompt"]
    ar = F.cross_entropy(logits[first - 1 : seq - 1].float(), p["tokens"][0, first:seq].to(dev))
    cons = (F.cross_entropy(logits[seq:].float(), p["targets"].to(dev), ignore_index=-100) if len(p["targets"])
            else ar * 0)
    return cons + ar_weight * ar, cons.item(), ar.item()


def train(model, rows: list[dict], steps: int, states: int = 4, rank: int = 16, alpha: float = 32.0, lr: float = 1e-3,
          ar_weight: float = 1.0, seed: int = 0, log=None, checkpoint=None) -> tuple[dict, dict]:
    """Wrap the model (the caller's own copy) with LoRA deltas and fine-tune them -> (wrappers, facts)."""
    wrapped = lora.wrap(model, rank, alpha, seed)
    history = []  # (consistency, AR) per step of this process (a resumed run's start is not in it)

    def loss(step: int, _gen) -> torch.Tensor:  # step s packs row s (cycling) with states drawn by a seed of s
        total, cons, ar = loss_of(model, packed(rows[step % len(rows)], states, random.Random(seed * 100003 + step)),
                                  ar_weight)
        history.append((cons, ar))
        return total

    plan = Plan(steps, lr, decay="linear", floor=0.05, every=20, seed=seed, checkpoint=checkpoint)
    res = fit(model, loss, plan, log=log, name="cllm", params=[p for m in wrapped.values() for p in (m.A, m.B)])
    first, last = history[:20], history[-20:]
    facts = {"steps": steps, "states": states, "rank": rank, "alpha": alpha, "lr": lr, "ar_weight": ar_weight,
             "seed": seed, "seconds": round(res.seconds),
             "loss_first": [round(sum(h[i] for h in first) / max(1, len(first)), 3) for i in (0, 1)],
             "loss_last": [round(sum(h[i] for h in last) / max(1, len(last)), 3) for i in (0, 1)]}
    return wrapped, facts


def held_out_tau(base, tuned, prompts: list[str], block: int, max_new_tokens: int) -> dict:
    """Jacobi τ of the base model and of the fine-tuned one on the same prompts (greedy), pooled."""
    from ..run import run

    out, texts = {}, {}
    for name, target, method in (("jacobi", base, "jacobi"), ("cllm", tuned, "cllm")):
        params = {"block": block} if method == "jacobi" else {"block": block, "adapter": tuned.deltas}
        traces = [run(target, method, p, params, max_new_tokens) for p in prompts]
        tokens, forwards = sum(t.new_tokens for t in traces), sum(t.target_forwards for t in traces)
        out[name] = {"tau": round(tokens / forwards, 3), "tokens": tokens, "forwards": forwards,
                     "per_prompt": [round(t.tau, 3) for t in traces]}
        texts[name] = [t.token_ids for t in traces]
    # greedy Jacobi outputs are each model's AR output: how far the fine-tuning moved the text
    out["same_as_base"] = sum(a == b for a, b in zip(texts["jacobi"], texts["cllm"]))
    return out


# ---------------------------------------------------------------- the command and its card
def add_parser(sub) -> None:
    from ..drafters.cllm import SHIPPED

    t = sub.add_parser("cllm", help="fine-tune the target on its own Jacobi trajectories (LoRA deltas + card)")
    t.add_argument("--block", type=int, default=16, help="n: guesses per Jacobi block")
    t.add_argument("--prompts", type=int, default=64, help="training prompts whose trajectories are collected")
    t.add_argument("--tokens", type=int, default=64, help="answer tokens per prompt (blocks of n)")
    t.add_argument("--max-prompt-tokens", type=int, default=160)
    t.add_argument("--steps", type=int, default=180, help="one packed row per step (450 overfitted: see the card)")
    t.add_argument("--states", type=int, default=4, help="states of each block per row")
    t.add_argument("--rank", type=int, default=16)
    t.add_argument("--alpha", type=float, default=32.0)
    t.add_argument("--lr", type=float, default=2e-3)
    t.add_argument("--ar-weight", type=float, default=1.0)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--eval-prompts", type=int, default=8, help="held-out Spec-Bench prompts for the τ measurement")
    t.add_argument("--threads", type=int, default=1,
                   help="torch threads (on a shared 2-core machine, 2 made Jacobi passes ~8x slower)")
    t.add_argument("--out", default=str(SHIPPED))


def command(args, argv) -> int:
    from ..bench import load_prompts
    from ..cache import cache_dir
    from ..drafters.cllm import Cllm
    from ..models import load
    from .selfdistill import SPECBENCH, command_line, training_prompts

    torch.set_num_threads(args.threads)
    base = load(None, "cpu", "float32")
    stored = cache_dir() / "cllm" / (f"trajectories-n{args.block}-p{args.prompts}-t{args.tokens}"
                                     f"-m{args.max_prompt_tokens}.json")
    if not stored.exists():  # otherwise collected before: the base model and the prompts have not changed
        t0 = time.perf_counter()
        rows = collect(base, training_prompts(), args.block, args.tokens, args.max_prompt_tokens, args.prompts,
                       _progress)
        print(file=sys.stderr)
        stored.parent.mkdir(parents=True, exist_ok=True)
        files.write_atomic(stored, json.dumps({"seconds": round(time.perf_counter() - t0), "rows": rows}))
    collected = json.loads(stored.read_text())
    rows, collect_s = collected["rows"], collected["seconds"]
    model = load(None, "cpu", "float32").model  # this process's own copy: wrapped and trained
    out = Path(args.out)
    wrapped, facts = train(model, rows, args.steps, args.states, args.rank, args.alpha, args.lr, args.ar_weight,
                           args.seed, checkpoint=out / CHECKPOINT)
    path = lora.save(wrapped, out, {"target": base.name, "block": args.block})
    tuned = lora.target_for(base, "cllm", {"adapter": str(out)})  # from the saved float16 file, as shipped
    held = [r["prompt"] for r in load_prompts(str(SPECBENCH), split="heldout", per_category=1)][: args.eval_prompts]
    tau = held_out_tau(base, tuned, held, args.block, args.tokens)
    facts.update(threads=args.threads, block=args.block, max_prompt_tokens=args.max_prompt_tokens, prompts=len(rows),
                 tokens=args.tokens, collect_seconds=collect_s,
                 states_total=sum(len(b["states"]) for r in rows for b in r["blocks"]),
                 mb=round(path.stat().st_size / 2**20, 1), heldout=tau, eval_prompts=len(held))
    files.write_atomic(out / "stats.json", json.dumps({"target": base.name, **facts}, indent=1) + "\n")
    files.write_atomic(out / "card.md", card(facts, base.name, command_line(argv), Cllm.label))
    done(out)
    print(f"cllm: held-out Jacobi tau {tau['jacobi']['tau']} (base) -> {tau['cllm']['tau']} (fine-tuned) -> {out}",
          file=sys.stderr)
    return 0


def _progress(msg: str) -> None:
    print(f"\r{msg}", end="", file=sys.stderr, flush=True)


def card(facts: dict, target: str, command: str, label: str) -> str:
    tau = facts["heldout"]
    lines = [f"# {target} + {label}: consistency-trained Jacobi (CLLM)", "",
             f"LoRA deltas (rank {facts['rank']}, alpha {facts['alpha']}) on every attention and MLP projection of "
             f"{target}, float16 safetensors ({facts['mb']} MB); `cllm` merges them into a copy of the target and runs "
             "Jacobi decoding on it. Lossless only relative to the fine-tuned model: its greedy output equals AR on "
             "the fine-tuned model, not on the base model. The numbers below are also in stats.json.", "",
             "## Training",
             f"- command: `{command}`",
             f"- data: greedy Jacobi trajectories of the base model (blocks of n = {facts['block']}, init repeat) "
             f"on the first {facts['prompts']} training prompts of at most {facts['max_prompt_tokens']} tokens "
             "(Spec-Bench's training split and the shipped prompts, never the held-out split), "
             f"{facts['tokens']} answer tokens each: {facts['states_total']} states "
             f"(collected in {facts['collect_seconds']} s)",
             f"- loss: consistency (from a state of a block, cross-entropy of the predictions at the block's positions "
             f"against the fixed point) + {facts['ar_weight']} x AR (cross-entropy on the model's own greedy answer)",
             f"- steps: {facts['steps']}, one prompt per step with {facts['states']} random states of each block "
             f"packed in one row; AdamW lr {facts['lr']} (warm-up, linear decay), seed {facts['seed']}",
             f"- loss (consistency, AR): first 20 steps {facts['loss_first']}, last 20 {facts['loss_last']}",
             f"- time: {facts['seconds']} s on the CPU ({facts['threads']} torch thread(s))", "",
             f"## Held-out Jacobi τ (tokens per target forward; {facts['eval_prompts']} Spec-Bench held-out prompts, "
             f"one per category, greedy, {facts['tokens']} new tokens, block {facts['block']})",
             "| model | τ | tokens | forwards |", "|---|---|---|---|",
             *(f"| {name} | {v['tau']:.3f} | {v['tokens']} | {v['forwards']} |" for name, v in
               (("base (jacobi)", tau["jacobi"]), (f"+ {label} (cllm)", tau["cllm"]))),
             "", f"The fine-tuned model's text equals the base model's on {tau['same_as_base']} of these "
             f"{facts['eval_prompts']} prompts (greedy Jacobi's output is each model's AR output)."]
    return "\n".join(lines) + "\n"
