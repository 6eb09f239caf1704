"""EAGLE training end to end on a tiny model in seconds: shards with the fused features, the
`python -m paradec.train eagle` command for both versions, its weights and card, and a run
with the trained head (greedy equal to AR); the training-time-test mask on a hand example."""
import pytest
import torch

from paradec.core.engine import decode
from paradec.core.sampling import Sampler
from paradec.drafters import eagle_head
from paradec.drafters.base import Drafter
from paradec.drafters.eagle import Eagle2, Eagle3
from paradec.train.__main__ import main as train_main
from paradec.train.answers import generate_shards
from paradec.train.eagle import loss_of

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


def test_training_time_test_attends_to_context_and_its_own_chain(tiny_loaded):
    """Unrolled step 2 at origin t must equal running the head as the drafter does: context
    entries 0..t with true features, then (step-1 output at t, token t+2) at position t+1."""
    model, H = tiny_loaded.model, tiny_loaded.model.config.hidden_size
    head = eagle_head.EagleHead(model.config, 1)
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
