"""The one training loop (paradec.train.loop): its schedule, the best state it keeps, and a resumed
run that ends exactly where an uninterrupted one does."""
import pytest
import torch

from paradec.train.loop import Plan, fit


class Interrupted(RuntimeError):
    pass


def _problem(seed: int = 0):
    """A small regression whose batches come from the loop's generator; `seed` sets the starting weights."""
    x = torch.randn(64, 4, generator=torch.Generator().manual_seed(0))  # the data: the same in every process
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    y = x.sum(-1, keepdim=True).sin()

    def loss(step, gen, stop_at=None):
        if step == stop_at:
            raise Interrupted
        idx = torch.randint(64, (8,), generator=gen)
        return torch.nn.functional.mse_loss(model(x[idx]), y[idx])

    return model, loss, lambda: -float(torch.nn.functional.mse_loss(model(x), y))


def test_the_schedule_warms_up_then_decays():
    cos = Plan(steps=100, lr=1.0, warmup=10)
    assert cos.factor(0) == pytest.approx(0.1) and cos.factor(9) == pytest.approx(1.0, abs=0.02)
    assert cos.factor(50) == pytest.approx(0.5) and cos.factor(99) < 0.01
    lin = Plan(steps=100, lr=1.0, warmup=1, decay="linear", floor=0.05)
    assert lin.factor(50) == pytest.approx(0.5) and lin.factor(99) == pytest.approx(0.05)


def test_a_resumed_run_ends_where_an_uninterrupted_one_does(tmp_path):
    model, loss, score = _problem()
    whole = fit(model, loss, Plan(steps=30, lr=0.05, every=5), score, log=lambda m: None)
    expected = [p.detach().clone() for p in model.parameters()]

    model, loss, score = _problem()  # the same start, interrupted at step 17, then run again
    plan = Plan(steps=30, lr=0.05, every=5, checkpoint=tmp_path / "checkpoint.pt")
    with pytest.raises(Interrupted):
        fit(model, lambda s, g: loss(s, g, stop_at=17), plan, score, log=lambda m: None)
    assert plan.checkpoint.exists()
    model, loss, score = _problem(seed=1)  # another process: other starting weights, restored from the file
    again = fit(model, loss, plan, score, log=lambda m: None)
    assert again.resumed_at == 15
    assert again.losses == pytest.approx(whole.losses, abs=0, rel=0)
    assert (again.best_step, again.best_score) == (whole.best_step, whole.best_score)
    for got, want in zip(model.parameters(), expected, strict=True):
        assert torch.equal(got, want)


def test_the_best_scoring_state_is_kept():
    model, loss, _ = _problem()
    snapshots = {}

    def score():  # best at step 10 of 30 by construction, whatever the loss does
        step = len(snapshots) * 5
        snapshots[step] = [p.detach().clone() for p in model.parameters()]
        return -abs(step - 10)

    res = fit(model, loss, Plan(steps=30, lr=0.05, every=5), score, log=lambda m: None)
    assert res.best_step == 10 and [s for s, _ in res.scores] == [5, 10, 15, 20, 25, 30]
    for got, want in zip(model.parameters(), snapshots[10], strict=True):
        assert torch.equal(got, want)


def test_a_checkpoint_of_another_run_is_refused(tmp_path):
    model, loss, score = _problem()
    plan = Plan(steps=10, lr=0.05, every=5, checkpoint=tmp_path / "checkpoint.pt")
    fit(model, loss, plan, score, log=lambda m: None)
    with pytest.raises(ValueError, match="another run"):
        fit(model, loss, Plan(steps=20, lr=0.05, every=5, checkpoint=plan.checkpoint), score, log=lambda m: None)
