"""python -m paradec.train stop: fit the learned draft-length rule (draft_length=learned) for a draft.

The data is the draft's own behaviour against the target, replayed exactly from the
self-distillation rows. At row position j the draft's greedy token is compared with the
target's (the argmax of the stored final hidden state times the LM head). A chain of greedy
sps that starts at j reaches its i-th token only if the tokens before it were accepted, and
then its context is the row itself as long as the row continues with the target's greedy
token. So every start j gives one sample per chain position reached: the drafter's features
there (draft_length.FEATURES) and whether the target accepts the token, the label of
P(accept | the tokens before were accepted). A logistic regression is fitted by Newton's
method (IRLS, a few steps in float64) on half of the prompts the draft was not trained on and
scored on the other half."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

from ..drafters.draft_length import FEATURES, MAX_K, features
from ..models import load, load_draft
from ..traces import files
from .draft import rows_of, split
from .selfdistill import add_data_args, command_line, learned_from, shards_of


@torch.no_grad()
def samples(draft, lm_head: torch.Tensor, rows: list[dict]) -> tuple[torch.Tensor, torch.Tensor]:
    """(features (m, F), accepted (m,)) of every chain position greedy sps reaches on these rows."""
    xs, ys = [], []
    for r in rows:
        tokens, answer = r["tokens"], r["answer"][1:]  # answer[j]: the token after position j is the target's
        q = torch.softmax(draft(input_ids=tokens[None]).logits[0, :-1].float(), dim=-1)
        target = torch.full_like(tokens[1:], -1)  # the LM head only where a chain can be: answer positions
        target[answer] = (r["hidden"][:-1][answer].to(lm_head.dtype) @ lm_head.T).argmax(-1)
        hit = (q.argmax(-1) == target).tolist()
        on_path = (tokens[1:] == target).tolist()  # the row goes on as the accepted chain would
        nxt = answer.tolist()
        for j in (j for j, a in enumerate(nxt) if a):
            for i in range(MAX_K):
                if j + i >= len(hit) or not nxt[j + i]:
                    break
                xs.append(features(i, q[j + i]))
                ys.append(float(hit[j + i]))
                if not (hit[j + i] and on_path[j + i]):
                    break
    return torch.tensor(xs, dtype=torch.float64).reshape(-1, len(FEATURES)), torch.tensor(ys, dtype=torch.float64)


def fit(x: torch.Tensor, y: torch.Tensor, l2: float = 1e-3, steps: int = 30) -> tuple[torch.Tensor, float]:
    """Logistic regression by Newton's method: (weights (F,), bias). A small ridge on the
    weights (not the bias) keeps a separable set from running off to infinity."""
    a = torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], dim=1)
    w = torch.zeros(a.shape[1], dtype=x.dtype)
    ridge = torch.full((a.shape[1],), l2 * len(x), dtype=x.dtype)
    ridge[-1] = 0.0
    for _ in range(steps):
        p = torch.sigmoid(a @ w)
        grad = a.T @ (p - y) + ridge * w
        hess = (a.T * (p * (1 - p))) @ a + torch.diag(ridge) + 1e-9 * torch.eye(len(w), dtype=x.dtype)
        step = torch.linalg.solve(hess, grad)
        w -= step
        if float(step.abs().max()) < 1e-10:
            break
    return w[:-1], float(w[-1])


def predict(x: torch.Tensor, weights: torch.Tensor, bias: float) -> torch.Tensor:
    return torch.sigmoid(x @ weights + bias)


def auc(score: torch.Tensor, y: torch.Tensor) -> float:
    """The chance that a random accepted sample scores above a random rejected one."""
    pos, neg = int(y.sum()), int((1 - y).sum())
    if not pos or not neg:
        return float("nan")
    ranks = torch.empty_like(score).scatter_(0, score.argsort(), torch.arange(1, len(score) + 1, dtype=score.dtype))
    return float((ranks[y > 0].sum() - pos * (pos + 1) / 2) / (pos * neg))


def scores(p: torch.Tensor, y: torch.Tensor, q_max: torch.Tensor) -> dict:
    """Held-out quality: log-loss against always predicting the base rate, ranking (AUC) against
    q's top probability alone (the confidence rule's signal), and calibration by predicted decile."""
    eps = 1e-9
    base = float(y.mean())
    ll = float(-(y * (p + eps).log() + (1 - y) * (1 - p + eps).log()).mean())
    base_ll = -(base * torch.log(torch.tensor(base + eps)) + (1 - base) * torch.log(torch.tensor(1 - base + eps)))
    order = p.argsort()
    bins = [[round(float(p[b].mean()), 3), round(float(y[b].mean()), 3), len(b)] for b in order.chunk(10) if len(b)]
    return {"samples": len(y), "accepted": round(base, 4), "log_loss": round(ll, 4),
            "base_log_loss": round(float(base_ll), 4),
            "auc": round(auc(p, y), 4), "auc_q_max": round(auc(q_max, y), 4), "calibration": bins}


def train(draft, lm_head: torch.Tensor, shards: list[dict], l2: float = 1e-3) -> dict:
    """Fit and score on rows the draft never trained on (its held-out prompts, halved by
    prompt): on its own training rows a distilled draft agrees with the target about twice
    as often, and a predictor fitted there stops far too late. Returns stop.json's contents."""
    t0 = time.perf_counter()
    fit_rows, score_rows = split(split(rows_of(shards))[1], every=2)
    x, y = samples(draft, lm_head, fit_rows)
    if len(y) == 0 or y.min() == y.max():
        raise ValueError("the stop predictor needs both accepted and rejected draft tokens in the data")
    weights, bias = fit(x, y, l2)
    hx, hy = samples(draft, lm_head, score_rows)
    facts = {"rows": len(fit_rows), "samples": len(y), "accepted": round(float(y.mean()), 4), "l2": l2,
             "heldout": scores(predict(hx, weights, bias), hy, hx[:, 0]) if len(hy) else None,
             "seconds": round(time.perf_counter() - t0, 1)}
    return {"features": list(FEATURES), "weights": [round(float(w), 6) for w in weights], "bias": round(bias, 6),
            "trained": facts}


def add_parser(sub) -> None:
    t = sub.add_parser("stop", help="fit the learned draft-length rule of sps (assets/drafters/sps-smollm2/stop.json)")
    add_data_args(t)
    t.add_argument("--draft", default="trained", help="the draft whose acceptance is predicted (as sps's --draft)")
    t.add_argument("--l2", type=float, default=1e-3, help="ridge on the weights, per sample")
    t.add_argument("--threads", type=int, default=1, help="torch CPU threads (the machine is shared)")
    t.add_argument("--out", default="", help="folder for stop.json (default: a trained draft's own folder)")
    t.add_argument("--model", default=None, help="the target (default: the embedded model)")


def command(args, argv) -> int:
    from ..models.draft_model import ASSET, STOP

    if not (args.out or args.draft.startswith("trained")):
        raise SystemExit("paradec.train stop: --out is needed for a draft that has no folder of its own")
    torch.set_num_threads(args.threads)
    target = load(args.model, "cpu", "float32")
    draft = load_draft(args.draft, target).model.eval()
    stop = train(draft, target.model.get_output_embeddings().weight.detach(), shards_of(args, ("hidden",)), args.l2)
    stop["trained"] |= {"command": command_line(argv),
                        "target": target.name, "draft": args.draft,
                        "data": learned_from(args)}
    out = Path(args.out or args.draft.partition(":")[2] or ASSET)
    out.mkdir(parents=True, exist_ok=True)
    files.write_atomic(out / STOP, json.dumps(stop, indent=1, ensure_ascii=False) + "\n")
    held = stop["trained"]["heldout"] or {}
    print(f"stop: weights {dict(zip(FEATURES, stop['weights']))}, bias {stop['bias']}; held-out AUC {held.get('auc')} "
          f"(q_max alone {held.get('auc_q_max')}) -> {out / STOP}", file=sys.stderr)
    return 0
