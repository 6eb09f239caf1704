"""What the tests build and share: the app's path and tiny random-weight models.

Test-only code lives here, not in the library: the library never builds a model nobody trained."""
from __future__ import annotations

import contextlib
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")  # AppTest.from_file takes the app by its full path


def tiny_model(vocab_size: int = 128, seed: int = 0, layers: int = 2, hidden: int = 64, dtype=torch.float32):
    """A random-weight Llama for fast tests: same code paths as a real target, milliseconds a pass."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=vocab_size, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=False,
    )
    with torch.random.fork_rng():  # seeded weights without touching the global generator
        torch.manual_seed(seed)
        return LlamaForCausalLM(cfg).to(dtype).eval()


def player(at, ns: str) -> dict:
    """The browser player's data on an AppTest page (AppTest cannot click inside it): the step it shows
    and every step's frame (story, stream, figures)."""
    import json

    el = next(e for e in at.get("bidi_component") if e.key == f"{ns}.player")
    data = json.loads(el.proto.json)
    return {**data, "frames": json.loads(data["frames"])}


def drawn(at):
    """What the player does once it has drawn a trace that replaced another (a live run, an import): it tells
    Python, and the rerun this makes draws the details under it."""
    return at.run()


def go_to(at, ns: str, step: int):
    """What the player does when it stops on a step (1-based): the step goes back to Python."""
    at.session_state[f"{ns}.step"] = step
    return at.run()


REQUIRE_TOOLS = [False]  # set from pytest's --require-tools (conftest.py): make test and CI pass it


def cannot_run(why: str):
    """A test whose tool is missing here (a compiler, a browser): a skip on a developer's plain pytest run, a
    failure under make test and CI (pytest --require-tools), where scripts/system_deps.sh installs every tool and
    a skip would pass without testing."""
    import pytest

    if REQUIRE_TOOLS[0]:
        pytest.fail(f"cannot run: {why} (scripts/system_deps.sh installs what the tests need)")
    pytest.skip(why)


def build(drafter_class, *models, **given):
    """A drafter built as a run builds it: the given parameters parsed and checked (InputError, a ValueError,
    for a bad one), the rest from its method's description."""
    from paradec import methods

    name = drafter_class.name
    return drafter_class(*models, **methods.resolve(name, methods.parse_params(name, given)))


@contextlib.contextmanager
def slowed(loaded, seconds: float):
    """Every target forward of `loaded`'s runs takes `seconds` longer while the block lasts: a run of the tiny model
    lasts long enough to be left or cancelled half way. It wraps the forward the decode loop calls (paradec's fast
    CPU forward, which never calls the model's modules: a hook on them would see no pass)."""
    target = loaded.decoder
    real = target.forward_many

    def forward_many(*args, **kwargs):
        time.sleep(seconds)
        return real(*args, **kwargs)

    target.forward_many = forward_many  # this instance only, until the block ends
    try:
        yield
    finally:
        del target.forward_many
