"""The tests' statistics, self-contained: chi-square tests (goodness of fit to exact probabilities,
and two samples against each other) and the exact distribution of the first tokens that plain
autoregressive sampling gives, computed by enumeration on a tiny model.

Every test rejects at significance ALPHA = 1e-3, with bins whose expected count is below 5 merged.
The generators use fixed seeds chosen before looking at any result and never tuned: the tests
are deterministic, and for a random seed a correct implementation fails each with probability ALPHA."""
from __future__ import annotations

import math
from collections import Counter

import torch

ALPHA = 1e-3
MIN_EXPECTED = 5


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for X ~ chi-square(df), df an integer: exact closed forms of the
    regularized upper incomplete gamma Q(df/2, x/2) (Poisson sum for even df, erfc plus
    a half-integer series for odd df)."""
    y = x / 2
    if df % 2 == 0:
        term = total = math.exp(-y)
        for i in range(1, df // 2):
            term *= y / i
            total += term
        return min(1.0, total)
    total = math.erfc(math.sqrt(y))
    term = math.exp(-y) * math.sqrt(y) / math.gamma(1.5)
    for j in range(1, (df - 1) // 2 + 1):
        total += term
        term *= y / (j + 0.5)
    return min(1.0, total)


def _merge_small(columns: list[list[float]], size) -> list[list[float]]:
    """Merge the columns with the smallest expected counts until each reaches MIN_EXPECTED."""
    out, acc = [], None
    for col in sorted(columns, key=size):
        acc = col if acc is None else [a + b for a, b in zip(acc, col)]
        if size(acc) >= MIN_EXPECTED:
            out.append(acc)
            acc = None
    if acc is not None:  # a small remainder joins the smallest full bin
        if out:
            out[0] = [a + b for a, b in zip(out[0], acc)]
        else:
            out.append(acc)
    return out


def gof_pvalue(counts: Counter, probs: dict) -> float:
    """Chi-square goodness of fit of observed counts to exact category probabilities."""
    n = sum(counts.values())
    cats = set(counts) | set(probs)
    bins = _merge_small([[counts.get(c, 0), n * probs.get(c, 0.0)] for c in cats], size=lambda col: col[1])
    assert len(bins) >= 2, "too few samples for a test"
    stat = sum((o - e) ** 2 / e for o, e in bins)
    return chi2_sf(stat, len(bins) - 1)


def two_sample_pvalue(a: Counter, b: Counter) -> float:
    """Chi-square test that two samples of categories come from one distribution (2 x K table)."""
    na, nb = sum(a.values()), sum(b.values())
    n = na + nb
    cats = set(a) | set(b)
    bins = _merge_small([[a.get(c, 0), b.get(c, 0)] for c in cats], size=lambda col: min(na, nb) * sum(col) / n)
    assert len(bins) >= 2, "too few samples for a test"
    stat = 0.0
    for oa, ob in bins:
        ea, eb = na * (oa + ob) / n, nb * (oa + ob) / n
        stat += (oa - ea) ** 2 / ea + (ob - eb) ** 2 / eb
    return chi2_sf(stat, len(bins) - 1)


def exact_joint(model, prompt: list[int], sampler, length: int) -> dict[tuple, float]:
    """P(the first `length` new tokens = x1..xn) under plain autoregressive sampling with `sampler`:
    every prefix of positive probability enumerated, depth by depth, one batched forward per depth
    (top-k keeps the prefixes few: at most k^(length-1); a 16-token vocabulary and 3 tokens: 4,096)."""
    prefixes = {(): 1.0}
    for _ in range(length):
        keys = list(prefixes)
        with torch.no_grad():
            rows = model(input_ids=torch.tensor([prompt + list(k) for k in keys])).logits[:, -1]
        grown = {}
        for key, row in zip(keys, rows):
            p = sampler.probs(row)
            for token in torch.nonzero(p).flatten().tolist():
                grown[key + (token,)] = prefixes[key] * float(p[token])
        prefixes = grown
    return prefixes


def exact_marginals(model, prompt: list[int], sampler, length: int) -> list[dict[int, float]]:
    """P(the t-th new token = x), t = 1..length, from the exact joint."""
    out = [Counter() for _ in range(length)]
    for seq, prob in exact_joint(model, prompt, sampler, length).items():
        for t, token in enumerate(seq):
            out[t][token] += prob
    return [dict(m) for m in out]


def marginals_pvalue(samples: list[list[int]], exact: list[dict[int, float]]) -> float:
    """One goodness-of-fit test per position, Bonferroni-combined: the smallest p-value times the
    number of positions (a valid test at ALPHA whatever the positions' dependence)."""
    ps = [gof_pvalue(Counter(s[t] for s in samples), exact[t]) for t in range(len(exact))]
    return min(1.0, min(ps) * len(ps))
