"""Parallel draft-and-verify (PEARL; Mirror Speculative Decoding): the draft keeps drafting while
the target verifies, on a worker thread of its own.

Speculative sampling leaves one model idle at a time: the target waits while the draft drafts,
the draft waits while the target verifies. Here, as soon as a chain d1..dk is proposed, a worker
thread bets on how the verify pass will end, and drafts the next chain for each bet while the pass
runs. An outcome is (j, b): the target accepts d1..dj and commits b after them (its correction of
d(j+1), or its bonus token when j = k). The worker guesses b from the draft's own distributions
(q's runners-up at each position, q's favourites after dk), ranks the outcomes by how likely the
draft thinks they are (q(d) standing in for the chance that d is accepted), and drafts a chain of k
after each, most likely first (Mirror-SD's branch
rollouts; PEARL's post-verify is the one bet j = k). When the pass ends the worker stops; if the
real outcome was drafted, the next proposal is ready (a hit: drafting left the critical path),
else the draft drafts it now, as sps would (a miss).

Lossless like sps: a chain is drawn from q given exactly the tokens committed before it. Each
outcome's chain draws from a generator seeded by the bet's seed and the outcome, so a hit and a
miss draw the same tokens: how far the worker got never changes the output. Seeds come from the
run's generator; the target's accept draws never touch them.

Steps record (paradec.core.records.Mirror) the bets ([j, b, chance, drafted?] best first), the outcome,
whether it was drafted (hit), when the worker ran (prefetch, on the run's clock) and how long
propose() waited for it (wait_ms): the page's timeline. parallel=false drafts the
same chains one after the other: the sequential baseline. On a GPU target, draft_device=cpu runs
the draft on a CPU copy, so the two workers overlap on separate hardware."""
from __future__ import annotations

import copy
import threading
import time

import torch

from ..core import records
from ..core.steps import Draft
from ..core.targets import as_target
from ..core.tree import chain_parents
from .chain import ChainDrafter
from .sps import draft_logits


class Mirror(ChainDrafter):
    name = "mirror"

    def __init__(self, draft_model, target_model=None, *, k: int, bets: int, parallel: bool, draft_device: str):
        self.params = dict(k=k, bets=bets, parallel=parallel, draft_device=draft_device)
        super().__init__(k, "fixed", 0.0)  # every chain is k long: the bets are on where a chain of k ends
        self.target_device = target_model.device if target_model is not None else draft_model.device
        moved = draft_device == "cpu" and draft_model.device.type != "cpu"
        # The CPU copy belongs to this run; the shared draft stays where it is, unmodified.
        self.model = copy.deepcopy(draft_model).to("cpu", torch.float32) if moved else draft_model

    def new_cache(self):
        return as_target(self.model).new_cache()

    def logits_after(self, tokens: list[int]) -> torch.Tensor:
        return draft_logits(self.model, self.cache, tokens)

    def begin(self, prompt_ids):
        super().begin(prompt_ids)  # the draft's own cache, for this run only
        self.job: _Job | None = None
        self.seed: int | None = None  # the current bet's seed (drawn from the run's generator)
        self.last: tuple[int, int] = (0, 0)  # the last verify pass's outcome (j, b)
        self.origin = time.perf_counter()

    @torch.inference_mode()
    def propose(self, ctx, sampler, gen) -> Draft:
        bet, ready = self._collect()
        if ready is None:  # the first step, or the outcome was not drafted: draft it now, with its own seed
            ready = self.chain(ctx, sampler, gen if self.seed is None else self._gen(self.last))
        tokens, qs = ready
        self.seed = int(torch.randint(2**62, (1,), generator=gen)) if gen is not None else len(ctx)
        if self.params["parallel"]:
            self.job = _Job(self, list(ctx), tokens, qs, sampler)
        return Draft(tokens=tokens, parents=chain_parents(len(tokens)), q=[q.to(self.target_device) for q in qs],
                     forwards=len(tokens), record=self.rule.record(len(tokens), records.Mirror, **bet))

    def end(self):
        """The last round's worker is still betting on an outcome already known: stop it and wait for it."""
        if self.job is not None:
            self.job.outcome = self.last
            self.job.thread.join()
            self.job = None

    def commit(self, ctx, draft, accepted, verified):
        super().commit(ctx, draft, accepted, verified)
        self.last = (len(accepted), ctx[-1])  # the outcome: the worker stops betting on others
        if self.job is not None:
            self.job.outcome = self.last

    def _gen(self, key: tuple[int, int]) -> torch.Generator:
        """The generator of the chain after outcome `key` of the current bet."""
        return torch.Generator(self.model.device).manual_seed(hash((self.seed, *key)) % 2**62)

    def _collect(self) -> tuple[dict, tuple | None]:
        """Wait for the worker: its round's record fields, and the outcome's chain if it drafted it, else None."""
        if self.job is None:
            return {}, None
        job, self.job = self.job, None
        t = time.perf_counter()
        job.thread.join()
        ready = job.done.get(job.outcome)
        bet = {"hit": ready is not None, "outcome": list(job.outcome),
               "wait_ms": round((time.perf_counter() - t) * 1e3, 3),
               "prefetch": [round(job.start_ms, 3), round(job.end_ms, 3)],
               "bets": [[j, b, round(c, 4), (j, b) in job.done] for c, j, b in job.bets]}
        return bet, ready


class _Job:
    """One round of bets, drafted on a worker thread while the target verifies the chain."""

    def __init__(self, drafter: Mirror, ctx: list[int], chain: list[int], qs: list[torch.Tensor], sampler):
        self.outcome: tuple[int, int] | None = None  # set by commit() once the verify pass is over
        self.done: dict[tuple[int, int], tuple] = {}
        self.bets: list[tuple[float, int, int]] = []
        self.start_ms = self.end_ms = 0.0
        self.thread = threading.Thread(target=self._run, args=(drafter, ctx, chain, qs, sampler), daemon=True)
        self.thread.start()

    def _run(self, drafter: Mirror, ctx, chain, qs, sampler) -> None:
        self.start_ms = (time.perf_counter() - drafter.origin) * 1e3
        with torch.inference_mode():  # grad mode is per thread: the decode loop's does not reach here
            self.bets = self._rank(drafter, ctx, chain, qs, sampler)
            for _, j, b in self.bets:
                if self.outcome is not None:
                    break
                # A started chain is finished only while it may still be the outcome.
                go_on = lambda key=(j, b): self.outcome in (None, key)  # noqa: E731
                tokens, q = drafter.chain(ctx + chain[:j] + [b], sampler, drafter._gen((j, b)), go_on)
                if len(tokens) == drafter.params["k"]:
                    self.done[(j, b)] = (tokens, q)
        self.end_ms = (time.perf_counter() - drafter.origin) * 1e3

    def _rank(self, drafter: Mirror, ctx, chain, qs, sampler) -> list[tuple[float, int, int]]:
        """The outcomes the draft finds likeliest: (chance, j, b), best first. Its own q(d) stands in
        for the chance that the target accepts d; a rejected d's correction is guessed among q's
        runners-up, the bonus among its favourites after the whole chain."""
        # q after dk costs one forward; its throwaway draw must not touch any chain's generator.
        _, (after,) = drafter.chain(ctx + chain, sampler, torch.Generator(drafter.model.device), lambda: False)
        n = drafter.params["bets"]  # candidates per position: the ranking decides where bets go
        bets, alive = [], 1.0  # alive: the chance that d1..dj are all accepted
        for j, (d, q) in enumerate(zip(chain, qs)):
            top = torch.topk(q, min(n + 1, q.shape[-1]))
            bets += [(alive * float(p), j, int(t)) for p, t in zip(top.values, top.indices) if int(t) != d][:n]
            alive *= float(q[d])
        top = torch.topk(after, min(n, after.shape[-1]))
        bets += [(alive * float(p), len(chain), int(t)) for p, t in zip(top.values, top.indices)]
        return sorted(bets, reverse=True)[:n]
