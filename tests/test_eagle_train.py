"""EAGLE training end to end on a tiny model in seconds: shards with the fused features, the
`python -m paradec.train eagle` command for both versions, its weights and card, and a run
with the trained head (greedy equal to AR); the training-time-test mask on a hand example;
a head of two decoder layers (`--layers 2`): its identity start, its unrolled loss, its files."""
import pytest
import torch

from paradec.core.drafter import Drafter
from paradec.core.engine import decode
from paradec.core.sampling import Sampler
from paradec.drafters import eagle_head
from paradec.drafters.eagle import Eagle2, Eagle3
from paradec.train.__main__ import main as train_main
from paradec.train.answers import generate_shards
from paradec.train.eagle import init_head, loss_of

from helpers import build

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def shards(tiny_loaded, tmp_path_factory):
    data = tmp_path_factory.mktemp("data")
    prompts = ["Say hi.", "Count to three, please.", "Name a colour.", "Add two and two.", "Spell cat."] * 2
    generate_shards(tiny_loaded, prompts, data, samples=1, batch=5, max_new_tokens=12)
    return data


@pytest.mark.parametrize("version,cls", [(1, Eagle2), (3, Eagle3)])
def test_train_command_end_to_end(tiny_loaded, tiny_dir, shards, tmp_path, capsys, version, cls):
    out = tmp_path / "head"
    data_args = ["--data", str(shards), "--features", str(shards)]  # answers and features together
    code = train_main(["eagle", "--version", str(version), *data_args, "--steps", "6", "--vocab", "256",
                       "--batch", "2", "--crop", "16", "--out", str(out), "--model", str(tiny_dir), "--threads", "1"])
    assert code == 0
    head, meta = eagle_head.load(out)
    assert head.version == version and 0 < len(head.vocab_ids) <= 256 and meta["trained"]["steps"] == 6
    card = (out / "card.md").read_text()
    assert f"EAGLE-{version}" in card and "seed 0" in card and "Held-out agreement" in card
    model, prompt = tiny_loaded.model, [1, 5, 9, 13, 2]
    ar = [t for s in decode(model, Drafter(), prompt, 16, Sampler()) for t in s.tokens]
    got = [t for s in decode(model, build(cls, model, head=str(out)), prompt, 16, Sampler()) for t in s.tokens]
    assert got == ar
    again = tmp_path / "again"  # the head above scored beside a new one, on the same held-out rows
    assert train_main(["eagle", "--version", str(version), *data_args, "--steps", "1", "--vocab", "256", "--batch",
                       "2", "--crop", "16", "--out", str(again), "--model", str(tiny_dir), "--baseline", str(out)]) == 0
    shipped = eagle_head.load(again)[1]["trained"]["baseline"]
    assert shipped["from"] == str(out) and all(0 <= a <= 1 for a in shipped["agreement"])
    assert f"eagle{version}: {out} scores " in capsys.readouterr().err  # to watch the new head pass it
    assert f"| the head in `{out}`, before this run |" in (again / "card.md").read_text()


@pytest.mark.parametrize("layers", [1, 2])
def test_training_time_test_attends_to_context_and_its_own_chain(tiny_loaded, layers):
    """Unrolled step 2 at origin t must equal running the head as the drafter does: context
    entries 0..t with true features, then (step-1 output at t, token t+2) at position t+1;
    in every layer (each attends to its own earlier keys)."""
    model, H = tiny_loaded.model, tiny_loaded.model.config.hidden_size
    head = eagle_head.EagleHead(model.config, 1, layers=layers)
    L, t = 7, 3
    tok = torch.randint(0, 100, (1, L))
    feats = torch.randn(1, L, H)
    b = {"tokens": tok, "valid": torch.ones(1, L, dtype=torch.bool), "answer": torch.ones(1, L, dtype=torch.bool),
         "feats": feats, "final": torch.randn(1, L, H)}
    rows = model.get_output_embeddings().weight[:50].detach()
    seen = []
    real = head.forward

    def spy(*a, **k):
        out = real(*a, **k)
        seen.append(out)
        return out

    head.forward = spy  # a test-local head: wrapped to read the unrolled outputs
    loss_of(head, b, model.get_input_embeddings(), rows, 2, 1.0)
    embed = model.get_input_embeddings()
    cache = eagle_head.HeadCache()
    with torch.no_grad():
        first = real(feats[:, : t + 1], embed(tok[:, 1 : t + 2]), torch.arange(t + 1)[None], cache=cache)
        second = real(first[:, -1:], embed(tok[:, t + 2 : t + 3]), torch.tensor([[t + 1]]), cache=cache)
    assert torch.allclose(seen[0][0, t], first[0, -1], atol=1e-5)
    assert torch.allclose(seen[1][0, t], second[0, 0], atol=1e-5)


def test_a_two_layer_head_starts_as_the_identity_learns_and_round_trips(tiny_loaded, tmp_path):
    """init_head zeroes every layer's output projections (the untrained head passes the high feature
    through); the loss unrolled over 3 steps falls in a few steps; save -> load (strict) keeps both layers."""
    model = tiny_loaded.model
    H, ids = model.config.hidden_size, torch.arange(0, 200, 2)
    head = init_head(model, 3, ids, layers=2)
    rows, embed = model.get_output_embeddings().weight[ids].detach(), model.get_input_embeddings()
    gen = torch.Generator().manual_seed(0)
    L = 12
    picked = rows[torch.randint(len(ids), (2, L), generator=gen)]
    b = {"tokens": torch.randint(0, 200, (2, L), generator=gen), "valid": torch.ones(2, L, dtype=torch.bool),
         "answer": torch.ones(2, L, dtype=torch.bool), "feats": torch.randn(2, L, 3 * H, generator=gen),
         "final": 10 * picked / picked.norm(dim=-1, keepdim=True) ** 2}  # a peaked p: one row scores 10
    with torch.no_grad():
        out = head(b["feats"], torch.zeros(2, L, H), torch.arange(L)[None])
    assert torch.allclose(out, b["feats"][..., -H:], atol=1e-6)
    opt = torch.optim.Adam(head.parameters(), lr=3e-3)
    losses = []
    for _ in range(8):
        loss, stats = loss_of(head, b, embed, rows, 3, 1.0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert len(stats) == 3 and losses[-1] < 0.9 * losses[0]
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in head.more[0].parameters())
    eagle_head.save(head, tmp_path / "h", model.config, {"trained": {"layers": 2}})
    loaded, meta = eagle_head.load(tmp_path / "h")
    assert len(loaded.layers) == 2 and meta["num_head_layers"] == 2 and meta["trained"]["layers"] == 2
    pos = torch.arange(L)[None]
    with torch.no_grad():
        emb = embed(b["tokens"])
        want, got = head.half().float()(b["feats"], emb, pos), loaded(b["feats"], emb, pos)
    assert torch.allclose(got, want, atol=1e-4, rtol=1e-4)


def test_the_command_trains_a_two_layer_head(tiny_loaded, tiny_dir, shards, tmp_path):
    out = tmp_path / "head"
    assert train_main(["eagle", "--version", "3", "--layers", "2", "--data", str(shards), "--features", str(shards),
                       "--steps", "2", "--vocab", "256", "--batch", "2", "--crop", "16", "--out", str(out), "--model",
                       str(tiny_dir), "--threads", "1"]) == 0
    head, meta = eagle_head.load(out)
    assert len(head.layers) == 2 and meta["trained"]["layers"] == 2
    assert "2 Llama decoder layers" in (out / "card.md").read_text()
