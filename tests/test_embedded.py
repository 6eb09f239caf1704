"""The embedded SmolLM2-135M-Instruct on the float32 engine: every lossless method with its shipped drafter (and sps
also with the target's first 6 layers as its draft) gives AR's greedy tokens on a question, and prompt lookup and that
sps give them on a code edit up to its end-of-sequence token, where all three stop (test_quant_embedded checks every
method on three prompts at 4 bits, the default).

Slow: the session fixture loads the model once (the very first load converts the GGUF, ~5 s); the runs take about
half a minute on one core."""
import pytest
from test_quant_embedded import LOSSLESS

from paradec.models import load_draft
from paradec.run import run

# One torch thread: on a busy 2-core machine two threads made these runs ~10x slower.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

N = 64  # the code edit's answer ends before: an end-of-sequence token stops it
QUESTION = "Explain in detail how a bicycle works."
CODE_EDIT = ("Rename the variable x to count in this code and show the whole result:\n"
             "def tally(items):\n    x = 0\n    for item in items:\n        if item:\n            x += 1\n"
             "    return x\n")


@pytest.fixture(scope="module")
def code_edit(embedded):
    draft = load_draft("self:6", embedded)
    return {"ar": run(embedded, "ar", CODE_EDIT, max_new_tokens=N),
            "pld": run(embedded, "pld", CODE_EDIT, max_new_tokens=N),
            "sps": run(embedded, "sps", CODE_EDIT, {"k": 3}, max_new_tokens=N, draft=draft)}


@pytest.mark.parametrize("method", ["pld", "sps"])
def test_greedy_equals_ar_up_to_the_end_of_sequence(code_edit, method):
    ar, other = code_edit["ar"], code_edit[method]
    assert other.token_ids == ar.token_ids
    assert other.text == ar.text
    assert 1 <= ar.new_tokens < N  # the end-of-sequence token stopped all three, at one place
    assert ar.tau == 1.0


@pytest.fixture(scope="module")
def every_method(embedded):
    """Every lossless method on the question, 32 tokens, sps and mirror with the trained draft."""
    drafts = {"sps": load_draft("trained", embedded), "mirror": load_draft("trained", embedded),
              "sps self:6": load_draft("self:6", embedded)}
    return {m: run(embedded, m.split()[0], QUESTION, max_new_tokens=32, draft=drafts.get(m)) for m in ["ar", *LOSSLESS]}


@pytest.mark.parametrize("method", LOSSLESS)
def test_every_lossless_method_equals_ar_in_float32(every_method, method):
    assert every_method[method].token_ids == every_method["ar"].token_ids


def test_the_methods_really_speculate(every_method, code_edit):
    """Equality would be trivial if nothing were ever accepted."""
    assert every_method["pld"].tau > 1.0 and every_method["eagle3"].tau > 1.0
    assert every_method["sps self:6"].accepted_drafts > 0 and code_edit["sps"].draft_forwards > 0
    for t in [*every_method.values(), *code_edit.values()]:
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


def test_the_float32_copy_is_what_transformers_reads_from_the_file(embedded):
    """The converted copy (paradec.models.embedded) against transformers' own reading of the GGUF file, layer 0's q, k
    and v: the gguf package's dequantization, then transformers' undoing of llama.cpp's rotary permutation."""
    import numpy as np
    import torch
    from gguf import GGMLQuantizationType, dequantize
    from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor

    from paradec.cpu.gguf_file import GGUFModel
    from paradec.models.gguf import gguf_file

    f = GGUFModel(gguf_file(None))
    undo = LlamaTensorProcessor(config={"num_attention_heads": f.config.num_attention_heads,
                                        "num_key_value_heads": f.config.num_key_value_heads})
    a = embedded.model.model.layers[0].self_attn
    for part, mine in (("q", a.q_proj), ("k", a.k_proj), ("v", a.v_proj)):
        name = f"blk.0.attn_{part}.weight"
        kind, _, rows = f.matrix(name)
        theirs = undo.process(dequantize(rows, GGMLQuantizationType(kind)), name).weights
        assert torch.equal(torch.from_numpy(np.ascontiguousarray(theirs)), mine.weight.detach()), part
