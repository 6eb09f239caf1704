"""paradec's extension computes each step of a decoder layer as torch's operations do (layer_ops.TorchOps:
Hugging Face's own norm and rotary, torch's attention), and a row's bits do not depend on the rows beside it."""
import pytest
import torch
from torch.testing import assert_close
from transformers.models.llama.modeling_llama import LlamaRMSNorm

from paradec.cpu import kernels
from paradec.cpu.layer_ops import KernelOps, TorchOps, causal, each_sequence

from helpers import cannot_run

HEADS, KV, D = 6, 2, 16  # three query heads share a key/value head (GQA), as in the embedded model


@pytest.fixture(scope="module")
def ops():
    k = kernels.kernel()
    if k is None:
        cannot_run(kernels.why_not())
    return KernelOps(k)


def _cache(b: int, capacity: int = 24, seed: int = 0, d: int = D):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, KV, capacity, d, generator=g), torch.randn(b, KV, capacity, d, generator=g)


def _rotary(b: int, m: int):
    angle = torch.rand(b, m, D // 2) * 20
    emb = torch.cat([angle, angle], dim=-1)  # Llama's layout: each frequency twice
    return emb.cos(), emb.sin()


def test_rmsnorm_is_the_models(ops):
    norm = LlamaRMSNorm(40, eps=1e-5)
    norm.weight.data = torch.randn(40)
    x = torch.randn(7, 40) * 3
    assert_close(ops.rmsnorm(x, norm), norm(x), atol=1e-6, rtol=1e-5)


def test_rope_rotates_q_and_writes_k_and_v_into_the_cache(ops):
    b, m, start = 2, 5, 3
    qkv = torch.randn(b * m, (HEADS + 2 * KV) * D)
    cos, sin = _rotary(b, m)
    (kw, vw), (kg, vg) = _cache(b), _cache(b)
    want = TorchOps.rope_qkv(qkv, cos, sin, kw, vw, start, HEADS, KV)
    got = ops.rope_qkv(qkv, cos, sin, kg, vg, start, HEADS, KV)
    assert got.shape == (b, m, HEADS, D)
    assert_close(got, want, atol=1e-6, rtol=1e-5)
    assert_close(kg, kw, atol=1e-6, rtol=1e-5)
    assert torch.equal(vg, vw)  # values are copied, untouched entries kept


def _tree_mask(b: int, m: int, start: int) -> torch.Tensor:
    """(B, M, start + M): every cached entry, itself, and a random subset of the earlier new tokens."""
    allowed = torch.rand(b, m, start + m) < 0.5
    allowed[..., :start] = True
    itself = torch.zeros(m, start + m, dtype=torch.bool)
    itself[:, start:] = torch.eye(m, dtype=torch.bool)
    return (allowed & causal(m, start)) | itself


@pytest.mark.parametrize("b, m, start, masked", [(1, 1, 9, False), (1, 6, 9, False), (2, 7, 4, True),
                                                 (1, 13, 0, False)])
def test_attention_is_torchs(ops, b, m, start, masked):
    kc, vc = _cache(b)
    q = torch.randn(b, m, HEADS, D)
    allowed = _tree_mask(b, m, start) if masked else None
    want = TorchOps.attention(q, kc, vc, start + m, allowed, 0.25)
    assert_close(ops.attention(q, kc, vc, start + m, allowed, 0.25), want, atol=1e-6, rtol=1e-5)


def test_attention_over_a_long_cache_is_torchs(ops):
    """The embedded model's head size (64) and a cache past several tiles of entries (64 each)."""
    kc, vc = _cache(1, 200, d=64)
    q = torch.randn(1, 9, HEADS, 64)
    for allowed in (None, _tree_mask(1, 9, 150)):
        want = TorchOps.attention(q, kc, vc, 159, allowed, 0.125)
        assert_close(ops.attention(q, kc, vc, 159, allowed, 0.125), want, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("m, start, d, capacity", [(8, 5, D, 24), (11, 130, 64, 160)])
def test_a_query_gets_the_same_bits_whatever_rows_share_its_pass(ops, m, start, d, capacity):
    """AR's 1-row pass and a verify pass's rows must agree exactly, so that greedy decoding is lossless
    to the bit: a row alone, after the entries it sees, equals that row among others, causal or masked
    (the second case: the embedded model's head size, and rows whose entries end at different places in
    the kernel's groups of keys and tiles)."""
    kc, vc = _cache(1, capacity, d=d)
    q = torch.randn(1, m, HEADS, d)
    rows = ops.attention(q, kc, vc, start + m, None, 0.25)
    for i in range(m):
        assert torch.equal(ops.attention(q[:, i:i + 1], kc, vc, start + i + 1, None, 0.25), rows[:, i:i + 1])
    allowed = _tree_mask(1, m, start)
    rows = ops.attention(q, kc, vc, start + m, allowed, 0.25)
    for i in range(m):
        alone = ops.attention(q[:, i:i + 1], kc, vc, start + m, allowed[:, i:i + 1], 0.25)
        assert torch.equal(alone, rows[:, i:i + 1])


def test_a_row_that_may_see_nothing_attends_to_nothing(ops):
    kc, vc = _cache(1)
    allowed = torch.zeros(1, 2, 6, dtype=torch.bool)
    allowed[0, 1, 0] = True
    out = ops.attention(torch.randn(1, 2, HEADS, D), kc, vc, 6, allowed, 0.25)
    assert torch.equal(out[0, 0], torch.zeros(HEADS, D)) and torch.equal(out[0, 1, 0], vc[0, 0, 0])


def test_a_long_prompts_rows_have_the_bits_of_a_short_pass(ops):
    """AR's first pass is the prompt, a method's may be the prompt and its draft: a prompt row's bits must not
    depend on how many rows follow it (torch's attention for passes of over 64 rows gave them other bits)."""
    kc, vc = _cache(1, capacity=80)
    q = torch.randn(1, 72, HEADS, D)
    long = ops.attention(q, kc, vc, 72, None, 0.25)
    assert torch.equal(ops.attention(q[:, :64].contiguous(), kc, vc, 64, None, 0.25), long[:, :64])
    assert_close(long, TorchOps.attention(q, kc, vc, 72, None, 0.25), atol=1e-5, rtol=1e-5)


def test_silu_gate_is_torchs_over_the_whole_range(ops):
    gate_up = torch.cat([torch.linspace(-120, 120, 1000), torch.randn(1000)]).view(2, 1000)
    assert_close(ops.silu_mul(gate_up), TorchOps.silu_mul(gate_up), atol=1e-6, rtol=2e-6)


def test_products_add_the_bias_and_the_residual(ops):
    k = ops.kernel
    w, x, bias, residual = torch.randn(37, 53), torch.randn(5, 53), torch.randn(37), torch.randn(5, 37)
    assert_close(k.linear(x, k.pack(w), 37, bias, residual), residual + (x @ w.T + bias), atol=1e-5, rtol=1e-5)
    assert_close(k.linear(x, k.pack(w), 37, residual=residual), residual + x @ w.T, atol=1e-5, rtol=1e-5)


def test_bad_shapes_are_refused_not_read_past(ops):
    kc, vc = _cache(1, capacity=4)
    with pytest.raises(RuntimeError, match="shapes"):
        ops.attention(torch.randn(1, 2, HEADS, D), kc, vc, 5, None, 0.25)  # more entries than the cache holds
    with pytest.raises(RuntimeError, match="shapes"):
        ops.rope_qkv(torch.randn(2, (HEADS + 2 * KV) * D), *_rotary(1, 2), kc, vc, 3, HEADS, KV)


@pytest.mark.parametrize("version", [1, 3])
def test_an_eagle_heads_drafting_pass_is_its_training_pass(ops, version):
    """Drafting (no gradient) runs the head's norms and attention in the extension; training keeps torch's.
    Both give the same outputs, with a cache, a tree mask over it, and causally."""
    from paradec.drafters import eagle_head

    from helpers import tiny_model

    target = tiny_model(64, seed=1, layers=2, hidden=64)
    head = eagle_head.EagleHead(target.config, version, torch.arange(16) if version == 3 else None).eval()
    with torch.no_grad():
        for p in head.parameters():
            p.add_(torch.randn_like(p) * 0.1)  # off the identity it starts from
    width = 3 * 64 if version == 3 else 64
    feats, emb = torch.randn(1, 9, width), torch.randn(1, 9, 64)
    tree = torch.ones(1, 1, 3, 9, dtype=torch.bool)
    tree[0, 0, 0, 7:] = tree[0, 0, 1, 8] = False  # three nodes after 6 entries: two siblings and a child

    def run():
        cache = eagle_head.HeadCache()
        first = head(feats[:, :6], emb[:, :6], torch.arange(6)[None], None, cache)
        nodes = head(feats[:, 6:, :64], emb[:, 6:], torch.tensor([[6, 6, 7]]), tree, cache)
        return torch.cat([first, nodes], dim=1), head.logits(nodes, target.lm_head.weight[:16])

    with torch.enable_grad():
        want = [t.detach() for t in run()]
    with torch.inference_mode():
        got = run()
    for g, w in zip(got, want):
        assert_close(g, w, atol=1e-5, rtol=1e-5)


def _sequences(seed: int = 0):
    """Three sequences' caches (layers 2, capacities 24, 40, 24, different lengths), rows (1, a chain of 4, a tree of
    5 under a mask) and their qkv rows and rotary angles, one after another."""
    counts, starts = [1, 4, 5], [7, 30, 0]
    ks, vs = zip(*(_cache(2, cap, seed + s) for s, cap in enumerate((24, 40, 24))))
    ks, vs = [k[:, None] for k in ks], [v[:, None] for v in vs]  # (layers, 1, kv, capacity, D)
    allowed = [None, None, _tree_mask(1, 5, 0)]
    qkv = torch.randn(sum(counts), (HEADS + 2 * KV) * D, generator=torch.Generator().manual_seed(seed))
    cos, sin = (x[0] for x in _rotary(1, sum(counts)))
    return qkv, cos, sin, [k.contiguous() for k in ks], [v.contiguous() for v in vs], starts, counts, allowed


@pytest.mark.parametrize("layer", [0, 1])
def test_several_sequences_in_one_call_get_the_bits_each_gets_alone(ops, layer):
    """Batched decoding's step: one call for every sequence's rows gives each the rotary, cache writes and attention
    that rope_qkv and attention give it alone, on its own cache and mask, bit for bit; the other layer is untouched."""
    qkv, cos, sin, ks, vs, starts, counts, allowed = _sequences()
    alone_k, alone_v = [k.clone() for k in ks], [v.clone() for v in vs]
    want = each_sequence(ops, qkv, cos, sin, alone_k, alone_v, layer, starts, counts, allowed, HEADS, KV, 0.25)
    got = ops.attend_many(qkv, cos, sin, ks, vs, layer, starts, counts, allowed, HEADS, KV, 0.25)
    assert torch.equal(got, want)
    assert all(torch.equal(a, b) for a, b in zip(ks + vs, alone_k + alone_v))
    torchs = TorchOps().attend_many(qkv, cos, sin, [k.clone() for k in ks], [v.clone() for v in vs], layer, starts,
                                    counts, allowed, HEADS, KV, 0.25)
    assert_close(got, torchs, atol=1e-5, rtol=1e-5)


def test_several_sequences_with_bad_shapes_are_refused_not_read_past(ops):
    qkv, cos, sin, ks, vs, starts, counts, allowed = _sequences()
    call = ops.kernel.attend_many
    with pytest.raises(RuntimeError, match="shape"):
        call(qkv, cos, sin, ks, vs, 0, [7, 30, 20], counts, allowed, HEADS, KV, 0.25)  # past a cache's capacity
    with pytest.raises(RuntimeError, match="shape"):
        call(qkv, cos, sin, ks, vs, 2, starts, counts, allowed, HEADS, KV, 0.25)  # no such layer
    with pytest.raises(RuntimeError, match="rows"):
        call(qkv, cos, sin, ks, vs, 0, starts, [1, 3, 5], allowed, HEADS, KV, 0.25)  # counts that miss a row
    with pytest.raises(RuntimeError, match="allowed"):
        call(qkv, cos, sin, ks, vs, 0, starts, counts, [None, None, allowed[2][:, :4]], HEADS, KV, 0.25)
