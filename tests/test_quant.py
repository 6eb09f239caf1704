"""The 4-bit engine without the embedded model: its products against the gguf package's own dequantization, a
row's bits whatever rows share a pass (1, 2, 8, 17 and 64 rows, any thread count), a small GGUF written from a
tiny Llama read back and run (batch-invariant end to end, trees included, near the float32 model), and a file of
another block type refused in one line."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType as Q
from gguf.quants import dequantize, quantize

from paradec.core import engine
from paradec.core.drafter import Drafter
from paradec.core.sampling import Sampler
from paradec.cpu import kernels
from paradec.cpu.fast import FastTarget
from paradec.cpu.quant import QLinear, QuantModel
from paradec.drafters.pld import PromptLookup
from paradec.models import ModelError, load

from gguf_files import Logits, write
from helpers import build, tiny_model

ROWS = (1, 2, 8, 17, 64)
TYPES = {"Q4_1": Q.Q4_1, "Q8_0": Q.Q8_0}


@pytest.fixture(scope="module")
def kernel():
    k = kernels.kernel()
    assert k is not None, f"the 4-bit engine needs paradec's kernel: {kernels.why_not()}"
    return k


def weight(kind: Q, n: int = 100, k: int = 576, seed: int = 0) -> tuple[np.ndarray, torch.Tensor]:
    """A random (n, k) weight as the file's blocks, and as the gguf package dequantizes them."""
    w = torch.randn(n, k, generator=torch.Generator().manual_seed(seed)).numpy()
    blocks = quantize(w, kind)
    return blocks, torch.from_numpy(dequantize(blocks, kind).reshape(n, k).astype(np.float32))


@pytest.mark.parametrize("kind", TYPES)
def test_products_match_the_gguf_packages_dequantization(kernel, kind):
    blocks, w = weight(TYPES[kind])
    lin = QLinear.pack(kernel, int(TYPES[kind]), w.shape[1], blocks)
    assert torch.equal(lin.rows(torch.arange(w.shape[0])), w)  # repacking keeps every value
    x = torch.randn(5, w.shape[1], generator=torch.Generator().manual_seed(1))
    exact = x.double() @ w.double().T
    scale = x.abs().double() @ w.abs().double().T  # what 8-bit activations lose is relative to sum |w x|
    assert float(((lin(x) - exact).abs() / scale).max()) < 1e-2
    ids = torch.tensor([7, 99, 0, 16, 31, 32])
    assert torch.equal(lin.select(ids)(x), lin(x)[:, ids])  # a subset's rows: the whole product's bits


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kind", TYPES)
def test_a_row_has_the_same_bits_whatever_rows_share_the_pass(kernel, kind, threads):
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        blocks, w = weight(TYPES[kind], n=100, k=1536)  # 100 columns: a panel's tail
        lin = QLinear.pack(kernel, int(TYPES[kind]), w.shape[1], blocks)
        x = torch.randn(64, w.shape[1], generator=torch.Generator().manual_seed(2))
        residual = torch.randn(64, w.shape[0])
        alone = torch.cat([lin(x[i:i + 1], residual[i:i + 1]) for i in range(64)])
        for m in ROWS:
            for first in (0, 64 - m):
                assert torch.equal(lin(x[first:first + m], residual[first:first + m]), alone[first:first + m])
    finally:
        torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny Llama and its GGUF file read back by the 4-bit engine."""
    model = tiny_model(128, layers=2, hidden=64)
    return model, QuantModel(write(model, tmp_path_factory.mktemp("gguf") / "tiny.gguf"))


def _pass(target, cache, ids, allowed=None, positions=None):
    start = cache.length
    positions = torch.arange(start, start + len(ids)) if positions is None else positions
    return target.forward(cache, ids, positions, allowed, len(ids))[0]


def test_the_file_reads_back_near_the_float32_model(tiny):
    model, quant = tiny
    ids = [1, 5, 7, 9, 3, 2, 40, 17]
    got = Logits(quant.target)(torch.tensor([ids])).logits[0]
    with torch.no_grad():
        want = model(input_ids=torch.tensor([ids])).logits[0]
    assert float((got - want).abs().max()) < 0.2 * float(want.abs().max())
    assert quant.config.num_hidden_layers == 2 and quant.config.vocab_size == 128


def test_the_forward_is_batch_invariant_end_to_end(tiny):
    """A token's logits have the same bits fed alone after its context, in a chain of M, as a tree's node (its
    siblings' entries hidden between it and its ancestors), and beside other sequences in one pass."""
    target = tiny[1].target
    prompt, tokens = [3, 1, 4, 1, 5, 9, 2, 6], list(range(10, 74))
    cache = target.new_cache()
    _pass(target, cache, prompt)
    alone = torch.cat([_pass(target, cache, [t]) for t in tokens])
    for m in ROWS:
        cache = target.new_cache()
        _pass(target, cache, prompt)
        assert torch.equal(_pass(target, cache, tokens[:m]), alone[:m])
    # a tree: the pending token 10, then siblings 99, 98 and 11, then 12 under 11 (the chain 10, 11, 12)
    cache = target.new_cache()
    _pass(target, cache, prompt)
    p, ids, parents = len(prompt), [10, 99, 98, 11, 12], [-1, 0, 0, 0, 3]
    allowed = torch.zeros(5, p + 5, dtype=torch.bool)
    allowed[:, :p] = True
    for i in range(5):
        j = i
        while j >= 0:
            allowed[i, p + j], j = True, parents[j]
    tree = _pass(target, cache, ids, allowed, torch.tensor([p, p + 1, p + 1, p + 1, p + 2]))
    assert torch.equal(tree[[0, 3, 4]], alone[:3])
    caches = [target.new_cache() for _ in range(3)]
    for c in caches:
        _pass(target, c, prompt)
    outs = target.forward_many([(c, tokens[:m], torch.arange(p, p + m), None, m) for c, m in zip(caches, (1, 8, 17))])
    for (logits, _), m in zip(outs, (1, 8, 17)):
        assert torch.equal(logits, alone[:m])


def test_a_prompts_rows_have_the_same_bits_however_the_pass_is_cut(tiny):
    """AR's first pass is the prompt, a method's may be the prompt and its first draft (over 64 rows): each row's
    logits are the same either way, and fed in pieces."""
    target = tiny[1].target
    ids = [(5 * i + 1) % 128 for i in range(80)]
    whole = _pass(target, target.new_cache(), ids)
    cache = target.new_cache()
    assert torch.equal(torch.cat([_pass(target, cache, ids[:64]), _pass(target, cache, ids[64:])]), whole)


def test_a_lossless_method_gives_ars_tokens(tiny):
    target = tiny[1].target
    prompt = [3, 1, 4, 1, 5, 9, 2, 6, 3, 1, 4, 1]  # repeats: prompt lookup has n-grams to copy

    def tokens(drafter):
        steps = engine.decode(target, drafter, prompt, 24, Sampler(), torch.Generator().manual_seed(0))
        return [t for s in steps for t in s.tokens]

    assert tokens(build(PromptLookup, k=4, ngram_max=2)) == tokens(Drafter())


def test_no_float32_copy_of_a_weight_matrix_is_held(tiny):
    """Every matrix is the file's blocks, packed (uint8); what is float32 is the norms and the rotary's table."""
    from paradec.bench_memory import storages

    quant = tiny[1]
    held = [t for layer in quant.target.layers for t in (layer.qkv, layer.o, layer.gate_up, layer.down)]
    assert all(lin.packed.dtype == torch.uint8 for lin in held + [quant.target.lm_head])
    floats = sum(t.numel() * 4 for layer in quant.target.layers for t in (layer.norm_in.weight, layer.norm_post.weight))
    assert sum(storages(quant).values()) < sum(lin.packed.numel() for lin in held) * 1.5 + floats + 2**16


def test_a_tensor_of_another_type_is_refused_in_one_line(tmp_path):
    path = write(tiny_model(128, layers=1, hidden=64), tmp_path / "odd.gguf", odd={"blk.0.attn_q.weight": Q.Q5_0})
    with pytest.raises(ModelError) as e:
        load(str(path), "cpu", "float32", weights="q4")
    assert "\n" not in str(e.value) and "blk.0.attn_q.weight is Q5_0" in str(e.value)


def test_q4_needs_a_gguf_file_on_the_cpu(tiny_dir):
    with pytest.raises(ModelError, match="reads a GGUF file"):
        load(str(tiny_dir), "cpu", "float32", weights="q4")


def test_the_float32_forward_keeps_a_trees_node_exact_too(tiny):
    """The attention's fix is both engines': a node's logits with its siblings hidden equal its chain's."""
    fast = FastTarget(tiny[0])
    prompt = [3, 1, 4, 1, 5]
    cache = fast.new_cache()
    _pass(fast, cache, prompt)
    chain = torch.cat([_pass(fast, cache, [t]) for t in (10, 11)])
    cache = fast.new_cache()
    _pass(fast, cache, prompt)
    p = len(prompt)
    allowed = torch.ones(3, p + 3, dtype=torch.bool)
    allowed[:, p:] = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 0, 1]], dtype=torch.bool)
    tree = _pass(fast, cache, [10, 99, 11], allowed, torch.tensor([p, p + 1, p + 1]))
    assert torch.equal(tree[[0, 2]], chain)


def test_a_request_for_other_weights_is_refused_before_it_runs(tiny_loaded):
    from paradec.methods import InputError
    from paradec.runner import Request, Runner

    runner = Runner(loaded={"tiny": tiny_loaded})
    with pytest.raises(InputError, match="runs on f32 weights here, not q4"):
        runner.prepare(Request("ar", "Hi", model="tiny", weights="q4"))
    assert runner.prepare(Request("ar", "Hi", model="tiny", weights="f32")).target is tiny_loaded


def test_the_weights_switch_is_checked_in_one_line(capsys):
    from paradec.cli import main

    assert main(["run", "--method", "ar", "--prompt", "Hi", "--weights", "q3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--weights" in err[0] and "q4" in err[0]
