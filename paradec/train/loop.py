"""The one training loop every trainer in paradec.train runs: AdamW, a linear warm-up then a decay,
gradient clipping, a held-out score every `every` steps with the best state kept, and a checkpoint
that lets an interrupted run go on where it stopped.

A trainer supplies what differs: the module being trained, `loss(step, gen)` for one batch (drawn
with the loop's seeded generator, so a resumed run draws the same batches), and `score()` on its
held-out rows (higher is better). The checkpoint holds the trained parameters, the optimiser, the
generator, the losses and the best parameters so far (not the frozen rest: a LoRA run's is small).
It is written atomically, loaded with weights_only (no arbitrary unpickling), and resuming from it
gives the same result as an uninterrupted run."""
from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..traces import files

CHECKPOINT = "checkpoint.pt"  # in the trainer's output folder while it trains


@dataclass
class Plan:
    """How to train: steps, learning rate and its schedule, clipping, evaluation and checkpoints."""
    steps: int
    lr: float
    weight_decay: float = 0.0
    warmup: int = 20  # steps of linear warm-up
    decay: str = "cosine"  # "cosine" to 0, or "linear" down to `floor` (x lr)
    floor: float = 0.0
    clip: float | None = 1.0  # max gradient norm; None: no clipping
    every: int = 50  # held-out score, log line and checkpoint every `every` steps (and at the last)
    seed: int = 0
    checkpoint: Path | None = None  # where to keep the resumable state; None: no checkpoint

    def factor(self, step: int) -> float:
        """The learning-rate multiplier at `step` (0-based)."""
        warm = min(1.0, (step + 1) / max(1, self.warmup))
        if self.decay == "linear":
            return min(warm, max(self.floor, 1 - step / self.steps))
        return min(warm, max(self.floor, 0.5 * (1 + math.cos(math.pi * step / self.steps))))


@dataclass
class Result:
    losses: list[float] = field(default_factory=list)
    best_step: int = 0  # the step whose state the module holds at the end (0: the starting state)
    best_score: float | None = None
    scores: list[tuple[int, float]] = field(default_factory=list)  # (step, held-out score) at each evaluation
    seconds: float = 0.0  # training time, summed over resumed runs
    resumed_at: int = 0  # the step an interrupted run was resumed from (0: a fresh run)

    def recent(self, n: int = 20) -> float:
        """The mean loss of the last n steps."""
        tail = self.losses[-n:]
        return sum(tail) / max(1, len(tail))


def to_stderr(msg: str) -> None:
    """A trainer's progress line, where no other log was given."""
    print(msg, file=sys.stderr)


def fit(module: torch.nn.Module, loss: Callable[[int, torch.Generator], torch.Tensor], plan: Plan,
        score: Callable[[], float] | None = None, log: Callable[[str], None] | None = None,
        name: str = "train", params: list[torch.nn.Parameter] | None = None) -> Result:
    """Train `module` (its trainable parameters, or `params`) for plan.steps steps; with `score`, end on
    the best-scoring state seen at an evaluation (the starting state counts as step 0)."""
    log = log or to_stderr
    params = params if params is not None else [p for p in module.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=plan.lr, weight_decay=plan.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: plan.factor(s))
    gen = torch.Generator().manual_seed(plan.seed)
    res, best = Result(), None
    if plan.checkpoint is not None and plan.checkpoint.exists():
        best = _resume(plan, params, opt, sched, gen, res)
        log(f"{name}: resumed at step {res.resumed_at}/{plan.steps} from {plan.checkpoint}")
    elif score is not None:
        res.best_score, best = _scored(module, score), _snapshot(params)
    t0 = time.perf_counter() - res.seconds
    for step in range(len(res.losses), plan.steps):
        module.train()
        value = loss(step, gen)
        opt.zero_grad()
        value.backward()
        if plan.clip is not None:
            torch.nn.utils.clip_grad_norm_(params, plan.clip)
        opt.step()
        sched.step()
        res.losses.append(value.item())
        if (step + 1) % plan.every and step + 1 != plan.steps:
            continue
        line = f"{name}: step {step + 1}/{plan.steps} loss {res.recent(plan.every):.3f}"
        if score is not None:
            s = _scored(module, score)
            res.scores.append((step + 1, s))
            if res.best_score is None or s > res.best_score:
                res.best_score, res.best_step, best = s, step + 1, _snapshot(params)
            line += f" held-out {s:.4f}"
        res.seconds = time.perf_counter() - t0
        log(f"{line} ({res.seconds:.0f} s)")
        if plan.checkpoint is not None:
            _save(plan, params, opt, sched, gen, res, best)
    if best is not None:
        _restore(params, best)
    module.eval()
    return res


def spread(rows: list, n: int) -> list:
    """Up to n of rows, evenly spread over them: held-out rows to score during training (the first n
    would come from the first few prompts only)."""
    return rows[:: max(1, len(rows) // n)][:n]


def done(folder: Path) -> None:
    """Remove a trainer's checkpoint from its output folder once the result is written."""
    (folder / CHECKPOINT).unlink(missing_ok=True)


def _scored(module: torch.nn.Module, score: Callable[[], float]) -> float:
    module.eval()
    with torch.no_grad():
        return float(score())


def _snapshot(params: list[torch.nn.Parameter]) -> list[torch.Tensor]:
    return [p.detach().clone() for p in params]


@torch.no_grad()
def _restore(params: list[torch.nn.Parameter], values: list[torch.Tensor]) -> None:
    for p, v in zip(params, values, strict=True):
        p.copy_(v)


def _save(plan: Plan, params, opt, sched, gen, res: Result, best) -> None:
    state = {"steps": plan.steps, "params": _snapshot(params), "opt": opt.state_dict(),
             "sched": sched.state_dict(), "gen": gen.get_state(), "losses": res.losses,
             "scores": res.scores, "best_step": res.best_step, "best_score": res.best_score,
             "best": best, "seconds": res.seconds}
    plan.checkpoint.parent.mkdir(parents=True, exist_ok=True)
    with files.replacing(plan.checkpoint) as tmp:  # a killed run leaves the previous checkpoint whole
        torch.save(state, tmp)


def _resume(plan: Plan, params, opt, sched, gen, res: Result):
    state = torch.load(plan.checkpoint, weights_only=True)
    shapes = [tuple(p.shape) for p in params]
    if state["steps"] != plan.steps or [tuple(v.shape) for v in state["params"]] != shapes:
        raise ValueError(f"{plan.checkpoint} is the checkpoint of another run ({state['steps']} steps): "
                         "delete it to start again")
    _restore(params, state["params"])
    opt.load_state_dict(state["opt"])
    sched.load_state_dict(state["sched"])
    gen.set_state(state["gen"])
    res.losses, res.scores = list(state["losses"]), [tuple(s) for s in state["scores"]]
    res.best_step, res.best_score, res.seconds = state["best_step"], state["best_score"], state["seconds"]
    res.resumed_at = len(res.losses)
    return state["best"]
