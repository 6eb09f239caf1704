"""The embedded model at 4 bits (its GGUF's own blocks, paradec.cpu.quant): every lossless method gives exactly
AR's greedy tokens, the forward is batch-invariant on the real weights (1, 2, 8, 17, 64 rows), its weights are the
float32 engine's bit for bit once dequantized and its logits near them, and AR's memory figure is small.

Slow: the 4-bit load takes seconds (the session fixture, once); the runs a few seconds each."""
import pytest
import torch

from paradec import bench_memory as memory
from paradec.models import load_draft
from paradec.run import run

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

N = 32
PROMPTS = {"question": "Explain in detail how a bicycle works.",
           "code edit": "Rename the variable x to count:\ndef tally(items):\n    x = 0\n    for item in items:\n"
                        "        x += 1\n    return x\n",
           # over 64 tokens, and prompt lookup drafts on its first step: a first pass of more rows than AR's
           "long": "Repeat this list twice, then say which item comes third: " + ", ".join(
               ["apple", "pear", "plum", "fig", "kiwi", "lime", "date", "grape"] * 4)}
LOSSLESS = ["pld", "sps", "sps self:6", "jacobi", "lookahead", "medusa", "eagle", "eagle2", "eagle3", "early_exit",
            "mirror"]


@pytest.fixture(scope="module")
def runs(embedded_q4):
    """Each method's run; sps and mirror with the trained draft (its own layers, the target's 4-bit embedding and
    LM-head rows), "sps self:6" with the target's first 6 layers (the same packed weights)."""
    drafts = {"sps": load_draft("trained", embedded_q4), "mirror": load_draft("trained", embedded_q4),
              "sps self:6": load_draft("self:6", embedded_q4)}
    out = {}
    for name, prompt in PROMPTS.items():
        out[name] = {m: run(embedded_q4, m.split()[0], prompt, max_new_tokens=N, draft=drafts.get(m))
                     for m in ["ar", *LOSSLESS]}
    return out


@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("method", LOSSLESS)
def test_greedy_equals_ar_at_4_bits(runs, prompt, method):
    ar, other = runs[prompt]["ar"], runs[prompt][method]
    assert other.weights == ar.weights == "q4"
    assert other.token_ids == ar.token_ids


def test_the_methods_really_speculate_at_4_bits(runs):
    for method in LOSSLESS:
        assert sum(r[method].accepted_drafts for r in runs.values()) > 0, method


def test_the_forward_is_batch_invariant_on_the_real_weights(embedded_q4):
    target = embedded_q4.fast
    prompt = embedded_q4.tokenizer("The quick brown fox jumps over the lazy dog.")["input_ids"]
    tokens = [(7 * i + 3) % 49152 for i in range(64)]

    def cached():
        cache = target.new_cache()
        target.forward(cache, prompt, torch.arange(len(prompt)), None, 1)
        return cache

    cache, p = cached(), len(prompt)
    alone = torch.cat([target.forward(cache, [t], torch.tensor([p + i]), None, 1)[0] for i, t in enumerate(tokens)])
    for m in (1, 2, 8, 17, 64):
        got, _ = target.forward(cached(), tokens[:m], torch.arange(p, p + m), None, m)
        assert torch.equal(got, alone[:m]), m
    outs = target.forward_many([(cached(), tokens[:m], torch.arange(p, p + m), None, m) for m in (2, 17)])
    assert all(torch.equal(logits, alone[:m]) for (logits, _), m in zip(outs, (2, 17)))


def test_the_weights_are_the_float32_engines_and_the_logits_near(embedded_q4, embedded):
    q, f = embedded_q4.fast, embedded.model
    a = f.model.layers[0].self_attn
    qkv = torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]).detach()
    assert torch.equal(q.layers[0].qkv.rows(torch.arange(qkv.shape[0])), qkv)  # q, k rows in HF's rotary order
    ids = torch.arange(0, 49152, 97)
    assert torch.equal(q.embed(ids), f.model.embed_tokens.weight[ids].detach())
    prompt = embedded_q4.tokenizer("The quick brown fox jumps over the lazy dog.")["input_ids"]
    positions = torch.arange(len(prompt))
    got, _ = q.forward(q.new_cache(), prompt, positions, None, len(prompt))
    want, _ = embedded.fast.forward(embedded.fast.new_cache(), prompt, positions, None, len(prompt))
    assert float((got - want).abs().max()) < 0.1 * float(want.abs().max())


def test_ars_memory_figure_is_the_files_bytes_not_float32s(embedded_q4):
    found = memory.measure(embedded_q4, "ar", "Hi!", max_new_tokens=8)["memory"]
    assert found["peak"] < 400 * 2**20
    assert found["weights_target"] < 100 * 2**20  # the packed blocks: 92 MiB in the file


def test_live_mode_runs_on_the_weights_the_sidebar_picks(embedded_q4):
    """The sidebar's Weights: a live run's key names them, its runner loads the target so (each precision its own
    target and lane), and the trace says which; the default is the file's own 4-bit blocks on a CPU."""
    import json

    from ui import live

    def key(weights: str):
        return live.Key("embedded", "cpu", "float32", None, "pld", json.dumps({"k": 4}), PROMPTS["code edit"], 8,
                        0.0, 1.0, 0, "", weights)

    got = {w: live.run(key(w)) for w in ("", "q4", "f32")}
    assert {w: t.weights for w, t in got.items()} == {"": "q4", "q4": "q4", "f32": "f32"}
    assert got["q4"].token_ids == got[""].token_ids
    assert live._live().runner(key("q4")).target() is not live._live().runner(key("f32")).target()
