"""The embedded SmolLM2-135M-Instruct on the float32 engine: ar, pld and sps (draft = the
target's first 6 layers) give identical greedy tokens, 64 new tokens on 3 prompts, and every lossless method with
its shipped drafter gives AR's tokens on one (test_quant_embedded checks them all at 4 bits, the default).

Slow: the session fixture loads the model once (the very first load converts the GGUF,
~20 s); the nine runs take about a minute on one core."""
import pytest
from test_quant_embedded import LOSSLESS

from paradec.models import load_draft
from paradec.run import run

# One torch thread: on a busy 2-core machine two threads made these runs ~10x slower.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

N = 64
PROMPTS = {  # the first stops early at an end-of-sequence token; pld accepts much on the second
    "code edit": (
        "Rename the variable x to count in this code and show the whole result:\n"
        "def tally(items):\n    x = 0\n    for item in items:\n        if item:\n            x += 1\n    return x\n"
    ),
    "question": "Explain in detail how a bicycle works.",
    "story": "Write a short story about a robot who learns to paint.",
}


@pytest.fixture(scope="module")
def runs(embedded):
    draft = load_draft("self:6", embedded)
    out = {}
    for name, prompt in PROMPTS.items():
        out[name] = {
            "ar": run(embedded, "ar", prompt, max_new_tokens=N),
            "pld": run(embedded, "pld", prompt, max_new_tokens=N),
            "sps": run(embedded, "sps", prompt, {"k": 3}, max_new_tokens=N, draft=draft),
        }
    return out


@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("method", ["pld", "sps"])
def test_greedy_equals_ar(runs, prompt, method):
    ar, other = runs[prompt]["ar"], runs[prompt][method]
    assert other.token_ids == ar.token_ids
    assert other.text == ar.text
    assert 1 <= ar.new_tokens <= N  # an end-of-sequence token may stop all three early, at one place
    assert ar.tau == 1.0


def test_the_methods_really_speculate(runs):
    """Equality would be trivial if nothing were ever accepted."""
    pld = runs["question"]["pld"]
    assert pld.accepted_drafts > 0 and pld.tau > 1.0
    assert sum(r["sps"].accepted_drafts for r in runs.values()) > 0
    assert all(r["sps"].draft_forwards > 0 for r in runs.values())
    for r in runs.values():
        for t in r.values():
            assert t.target_forwards == len(t.steps)
            assert t.tau == t.new_tokens / t.target_forwards


def test_draft_shares_the_target_and_leaves_it_untouched(embedded):
    before = {k: v.clone() for k, v in list(embedded.model.state_dict().items())[:8]}
    draft = load_draft("self:2", embedded)
    assert draft.tokenizer is embedded.tokenizer
    assert draft.model.config.num_hidden_layers == 2
    assert embedded.model.config.num_hidden_layers > 2
    after = embedded.model.state_dict()
    assert all((before[k] == after[k]).all() for k in before)


@pytest.fixture(scope="module")
def every_method(embedded):
    """Every lossless method on the question, 32 tokens, sps and mirror with the trained draft."""
    drafts = {"sps": load_draft("trained", embedded), "mirror": load_draft("trained", embedded),
              "sps self:6": load_draft("self:6", embedded)}
    prompt = PROMPTS["question"]
    return {m: run(embedded, m.split()[0], prompt, max_new_tokens=32, draft=drafts.get(m)) for m in ["ar", *LOSSLESS]}


@pytest.mark.parametrize("method", LOSSLESS)
def test_every_lossless_method_equals_ar_in_float32(every_method, method):
    assert every_method[method].token_ids == every_method["ar"].token_ids
