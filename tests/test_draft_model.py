"""The trained sps draft: training runs end to end on a tiny model in seconds, its file holds
only the draft's own weights, sps with it gives AR's greedy tokens, its q is zero outside
the vocabulary subset, and the embedded model uses the shipped draft by default."""
import json

import pytest
import torch
from safetensors import safe_open

from paradec.cli import main as cli_main
from paradec.drafters.subset import SUBSET_KEY
from paradec.models import TRAINED, default_draft, load_draft
from paradec.models.draft_model import ASSET, WEIGHTS
from paradec.run import run
from paradec.train.__main__ import main as train_main
from paradec.train.answers import generate_shards
from paradec.train.draft import train
from paradec.train.selfdistill import frequent_tokens, load_shards

pytestmark = pytest.mark.usefixtures("one_thread")

PROMPTS = ["Say hi.", "Count to three, please.", "Name a colour.", "What is two plus two?", "Spell cat.", "Go on."]
V_SUB = 64


@pytest.fixture(scope="module")
def data(tiny_loaded, tmp_path_factory):
    """Tiny self-distillation shards from the tiny target."""
    return generate_shards(tiny_loaded, PROMPTS, tmp_path_factory.mktemp("data"), samples=2, batch=3, max_new_tokens=8)


@pytest.fixture(scope="module")
def trained(data, tiny_dir, tmp_path_factory):
    """The training command on those shards (a few seconds): the draft's folder."""
    out = tmp_path_factory.mktemp("draft")
    data_args = ["--data", str(data), "--features", str(data)]  # answers and features together
    code = train_main(["draft", *data_args, "--model", str(tiny_dir), "--layers", "1",
                       "--vocab", str(V_SUB), "--steps", "6", "--out", str(out)])
    assert code == 0
    return out


def test_training_leaves_the_target_untouched(data, tiny_loaded):
    before = {k: v.clone() for k, v in tiny_loaded.model.state_dict().items()}
    draft, facts = train(tiny_loaded.model, load_shards(data), layers=1, vocab=V_SUB, steps=3)
    assert all(torch.equal(v, tiny_loaded.model.state_dict()[k]) for k, v in before.items())
    assert facts["steps"] == 3 and facts["after"]["tokens"] > 0 and not draft.training


def test_the_file_holds_only_the_drafts_own_weights(trained):
    card = (trained / "card.md").read_text()
    for fact in ("steps: 6", "seed 0", "held out", "α", "time:"):
        assert fact in card
    with safe_open(str(trained / WEIGHTS), "pt") as f:
        keys, meta = set(f.keys()), f.metadata()
        assert f.get_tensor(SUBSET_KEY).shape == (V_SUB,)
        assert f.get_tensor("model.norm.weight").dtype == torch.float16
    assert meta["layers"] == "1"
    assert SUBSET_KEY in keys and all(k.startswith(("model.layers.0.", "model.norm.")) for k in keys - {SUBSET_KEY})


def test_a_baseline_draft_is_scored_on_the_same_held_out_rows(data, trained, tiny_dir, tmp_path):
    again = tmp_path / "again"
    code = train_main(["draft", "--data", str(data), "--features", str(data), "--model", str(tiny_dir), "--layers", "1",
                       "--vocab", str(V_SUB), "--steps", "1", "--out", str(again), "--baseline", str(trained)])
    card = (again / "card.md").read_text()
    row = next(line for line in card.splitlines() if f"the draft in `{trained}`, before this run" in line)
    alpha = float(row.split("|")[2])
    assert code == 0 and 0 <= alpha <= 1 and "before training" in card


def test_greedy_sps_with_the_trained_draft_equals_ar(trained, tiny_loaded):
    draft = load_draft(f"{TRAINED}:{trained}", tiny_loaded)
    assert (draft.model.full.model.embed_tokens.weight.data_ptr()
            == tiny_loaded.model.model.embed_tokens.weight.data_ptr())
    subset = set(draft.model.subset.ids.tolist())
    for prompt in PROMPTS[:3]:
        ar = run(tiny_loaded, "ar", prompt, max_new_tokens=24)
        sps = run(tiny_loaded, "sps", prompt, {"k": 3}, max_new_tokens=24, draft=draft)
        assert sps.token_ids == ar.token_ids
        assert sps.draft_forwards > 0
        # q is zero outside the subset: the draft proposes, and its top list holds, only subset tokens
        nodes = [n for s in sps.steps for n in s.nodes]
        assert nodes and all(n.token in subset and {t for t, q in n.q_top if q > 0} <= subset for n in nodes)


def test_cli_runs_with_a_trained_draft(trained, tiny_dir, capfd):
    code = cli_main(["run", "--method", "sps", "--prompt", "hi there", "--model", str(tiny_dir),
                     "--draft", f"{TRAINED}:{trained}", "--max-new-tokens", "6", "--json"])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert json.loads(out)["draft_forwards"] > 0


def test_a_missing_trained_draft_is_one_line(tiny_dir, tmp_path, capfd):
    code = cli_main(["run", "--method", "sps", "--prompt", "hi", "--model", str(tiny_dir),
                     "--draft", f"trained:{tmp_path}"])
    err = capfd.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "no trained draft" in err


def test_the_embedded_model_defaults_to_the_trained_draft():
    assert default_draft(None) == default_draft("embedded") == TRAINED
    assert default_draft("some/other-model") is None


def test_frequent_tokens():
    rows = [{"tokens": torch.tensor([5, 3, 3, 9, 3, 9]), "answer": torch.tensor([False, True, True, True, True, True])}]
    assert frequent_tokens(rows[0]["tokens"][rows[0]["answer"]], 2).tolist() == [3, 9]  # 5 is in the prompt only


@pytest.mark.slow
def test_shipped_draft_on_the_embedded_model(embedded_q4, tmp_path, capfd):
    """The shipped weights load onto the embedded model (at 4 bits, the default), give AR's tokens, and are trained: the
    same layers before training (the target's first layer) almost never agree with the target."""
    assert (ASSET / WEIGHTS).exists() and (ASSET / "card.md").exists()
    draft = load_draft(TRAINED, embedded_q4)
    accepted = drafted = 0
    for prompt in ["Explain in detail how a bicycle works.", "Write a short story about a robot who learns to paint."]:
        ar = run(embedded_q4, "ar", prompt, max_new_tokens=32)
        sps = run(embedded_q4, "sps", prompt, max_new_tokens=32, draft=draft)
        assert sps.token_ids == ar.token_ids
        accepted, drafted = accepted + sps.accepted_drafts, drafted + sps.drafted
    assert accepted > 0.05 * drafted
    # With no --draft, sps on the embedded model runs with this draft.
    code = cli_main(["run", "--method", "sps", "--prompt", "Say hi.", "--max-new-tokens", "4", "--device", "cpu",
                     "--trace", str(tmp_path / "t.json")])
    assert code == 0, capfd.readouterr().err
    assert "trained draft" in json.loads((tmp_path / "t.json").read_text())["draft_model"]


def test_a_draft_with_a_smaller_embedding_table(tiny_loaded):
    """Same tokenizer, fewer embedding rows (as Qwen2.5-0.5B against the 7B): q is padded with
    zeros, greedy output equals AR and sampling runs; a larger table is refused."""
    from paradec.methods import InputError
    from paradec.models import Loaded
    from paradec.run import run

    from helpers import tiny_model

    tok, vocab = tiny_loaded.tokenizer, tiny_loaded.model.config.vocab_size
    small = Loaded(tiny_model(vocab - 16, seed=1), tok, "small", "cpu", "float32")
    ar = run(tiny_loaded, "ar", "Hi there", max_new_tokens=12)
    assert run(tiny_loaded, "sps", "Hi there", max_new_tokens=12, draft=small).token_ids == ar.token_ids
    assert run(tiny_loaded, "sps", "Hi there", max_new_tokens=12, temperature=1.0, draft=small).token_ids
    big = Loaded(tiny_model(vocab + 16, seed=1), tok, "big", "cpu", "float32")
    with pytest.raises(InputError, match="does not share"):
        run(tiny_loaded, "sps", "Hi there", max_new_tokens=4, draft=big)
