"""The sampled end-to-end tests (tests/test_sampling_e2e.py) on several disjoint blocks of seeds: each test runs
one block, and a statistical test that passes correct code or catches a mistake on one block only is luck,
not power. For each method, the correct code and each mistake the test file injects, on each block: the
p-value, whether it is the test's verdict (correct: p > ALPHA and the coverage preconditions hold; a mistake:
p < ALPHA), and the coverage the preconditions read. Exit status 1 when any verdict is wrong.

    .venv/bin/python scripts/seed_blocks.py [--methods pld,mirror] [--blocks 0,10000,20000,30000] [--weights q4]

Both engines (the tiny model on paradec's float32 CPU forward, its GGUF file on the 4-bit engine), every method,
every mistake, four blocks: about 10 minutes on one core."""
from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # paradec, and the tests' modules (their folder is no package)
import test_sampling_e2e as e2e  # noqa: E402

from gguf_files import Logits  # noqa: E402
from stats import ALPHA, exact_marginals, marginals_pvalue  # noqa: E402


def verdict(target, exact, make, method: str, mistake: str | None, base: int) -> bool:
    """One block of one case, printed as a row; whether the test's verdict on it is the right one."""
    t0 = time.perf_counter()
    with contextlib.nullcontext() if mistake is None else e2e.injected(mistake):
        samples, steps = e2e.draw(target, make, e2e.RUNS[method], base)
    p, seen = marginals_pvalue(samples, exact), e2e.coverage(steps)
    ok = p > ALPHA and e2e.covered(seen) if mistake is None else p < ALPHA
    shown = " ".join(f"{k} {v:.3g}" for k, v in seen.items())
    print(f"{target.weights:<4} {method:<11} {mistake or 'correct':<38} {base:>6}  p {p:.2e}  "
          f"{'ok' if ok else 'WRONG':<5} {shown}  ({time.perf_counter() - t0:.0f} s)", flush=True)
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default=",".join(e2e.RUNS))
    parser.add_argument("--blocks", default=",".join(map(str, e2e.BLOCKS)))
    parser.add_argument("--weights", default="f32,q4", help="the engines: f32, q4 or both")
    parser.add_argument("--correct-only", action="store_true", help="skip the mistakes")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # as the tests run: tiny tensors, one thread
    model = e2e.build_target()
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for weights in args.weights.split(","):
            target = e2e.engine_of(model, weights, Path(folder))
            exact = exact_marginals(Logits(target.decoder), e2e.PROMPT, e2e.SAMPLER, e2e.LENGTH)
            drafters = e2e.build_drafters(model, target, Path(folder) / weights)
            for method in args.methods.split(","):
                for mistake in [None] + ([] if args.correct_only else e2e.CAUGHT[method]):
                    for base in map(int, args.blocks.split(",")):
                        results.append(verdict(target, exact, drafters[method], method, mistake, base))
    print(f"{results.count(False)} wrong verdicts of {len(results)}")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
