"""Self-speculative early exit: greedy equal to AR for several draft lengths, exit layers and
with or without an adapter; the target's shared layers are never modified; the training
command end to end on a tiny model in seconds; the shipped adapter on the embedded model."""
import json

import pytest
import torch

from paradec.core.drafter import Drafter
from paradec.core.engine import decode
from paradec.core.sampling import Sampler
from paradec.drafters.early_exit import EarlyExit
from paradec.methods import InputError, make_drafter
from paradec.models import Loaded
from paradec.train.__main__ import main as train_main
from paradec.train.answers import generate_shards

from helpers import build, tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")
PROMPT = [1, 5, 9, 13, 2]


def tokens(model, drafter, prompt=PROMPT, n=20, sampler=None, seed=None):
    gen = None if seed is None else torch.Generator().manual_seed(seed)
    return [t for s in decode(model, drafter, prompt, n, sampler or Sampler(), gen) for t in s.tokens]


@pytest.fixture(scope="module")
def deep(tokenizer):
    """A tiny random Llama with 4 layers (exit layer 2 leaves two for the verifier)."""
    return Loaded(tiny_model(vocab_size=len(tokenizer), layers=4), tokenizer, "tiny4", "cpu", "float32")


@pytest.fixture(scope="module")
def command_args(deep, tmp_path_factory):
    """The train command's arguments for tiny shards of the tiny 4-layer model (saved to a folder)."""
    data, model_dir = tmp_path_factory.mktemp("data"), tmp_path_factory.mktemp("tiny4")
    deep.model.save_pretrained(model_dir)
    deep.tokenizer.save_pretrained(model_dir)
    prompts = ["Say hi.", "Count to three, please.", "Name a colour.", "Add two and two.", "Spell cat."] * 2
    generate_shards(deep, prompts, data, samples=1, batch=5, max_new_tokens=12)
    return ["early_exit", "--data", str(data), "--features", str(data), "--vocab", "256", "--batch", "2",
            "--crop", "16", "--model", str(model_dir), "--threads", "1"]  # answers and features together


@pytest.fixture(scope="module")
def trained(command_args, tmp_path_factory):
    """The train command on tiny shards: -> the adapter folder."""
    out = tmp_path_factory.mktemp("adapter")
    assert train_main([*command_args, "--steps", "6", "--out", str(out)]) == 0
    return out


def test_a_baseline_adapter_is_scored_on_the_same_rows(command_args, trained, tmp_path):
    assert train_main([*command_args, "--steps", "1", "--out", str(tmp_path), "--baseline", str(trained)]) == 0
    shipped = json.loads((tmp_path / "stats.json").read_text())["baseline"]
    assert shipped["from"] == str(trained) and 0 <= shipped["agreement"] <= 1
    card = (tmp_path / "card.md").read_text()
    assert f"the adapter in `{trained}` (before this run): {shipped['agreement']:.3f}" in card


@pytest.mark.parametrize("k,exit_layer", [(1, 1), (3, 2), (5, 3), (8, 1)])
def test_plain_exit_greedy_equals_ar(deep, k, exit_layer):
    model = deep.model
    plain = build(EarlyExit, model, k=k, exit_layer=exit_layer, adapter="none")
    assert tokens(model, plain) == tokens(model, Drafter())


@pytest.mark.parametrize("k", [1, 4])
def test_trained_adapter_greedy_equals_ar_and_the_command_writes_its_card(deep, trained, k):
    card = (trained / "card.md").read_text()
    assert "seed 0" in card and "Held-out agreement" in card and "layers before the exit" in card
    assert (trained / "stats.json").exists()
    model = deep.model
    assert tokens(model, build(EarlyExit, model, k=k, exit_layer=2, adapter=str(trained))) == tokens(model, Drafter())


def test_sampling_runs_and_is_reproducible(deep):
    model, s = deep.model, Sampler(temperature=0.8)
    runs = [tokens(model, build(EarlyExit, model, k=3, adapter="none"), sampler=s, n=12, seed=3) for _ in range(2)]
    assert runs[0] == runs[1] and len(runs[0]) == 12


def test_the_shared_model_is_never_modified(deep, trained):
    model = deep.model
    before = {k: v.clone() for k, v in model.state_dict().items()}
    names = {n for n, _ in model.named_modules()}
    for adapter in ("none", str(trained)):
        tokens(model, build(EarlyExit, model, k=4, exit_layer=2, adapter=adapter))
    assert {n for n, _ in model.named_modules()} == names
    after = model.state_dict()
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)


def test_bad_parameters_are_one_line_errors(deep, trained):
    with pytest.raises(InputError, match="exit_layer"):
        make_drafter("early_exit", {"exit_layer": 4}, target_model=deep.model)
    with pytest.raises(InputError, match="trained at exit layer 2"):
        make_drafter("early_exit", {"exit_layer": 1, "adapter": str(trained)}, target_model=deep.model)
    with pytest.raises(InputError, match="cannot load"):
        make_drafter("early_exit", {"adapter": "/nonexistent"}, target_model=deep.model)


@pytest.mark.slow
def test_shipped_adapter_on_the_embedded_model(embedded):
    from paradec.models import encode_prompt

    model = embedded.model
    prompt = encode_prompt(embedded.tokenizer, "Explain what a hash table is in two sentences.")
    ar = tokens(model, Drafter(), prompt, 32)
    steps = list(decode(model, build(EarlyExit, model, k=4), prompt, 32, Sampler()))
    assert [t for s in steps for t in s.tokens] == ar
    assert len(steps) < len(ar)  # some drafts were accepted: fewer target passes than tokens
