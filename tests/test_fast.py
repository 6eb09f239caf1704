"""The fast CPU forward (paradec.cpu.fast) computes what the Hugging Face model computes: the same logits and
hidden states (to float32 rounding) for a prefill, a chain, a tree and a Lookahead window, with its
packed kernel and with torch's fallback; its cache compacts like the verifier's; and every method's greedy
tokens through it equal AR's through it."""
import pytest
import torch

from paradec.core import verify
from paradec.core.drafter import Drafter
from paradec.core.engine import decode
from paradec.core.sampling import Sampler
from paradec.core.steps import Draft
from paradec.core.targets import HFTarget
from paradec.cpu import kernels
from paradec.cpu.fast import Cache, FastTarget

from helpers import cannot_run, tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")

V = 80
ATOL = 2e-5


@pytest.fixture(scope="module")
def model():
    m = tiny_model(V, seed=3, layers=3, hidden=64)
    with torch.no_grad():
        m.lm_head.weight.mul_(6.0)  # peakier: drafts are sometimes accepted
    return m


@pytest.fixture(scope="module", params=["kernel", "torch"])
def fast(model, request):
    if request.param == "kernel" and kernels.kernel() is None:
        cannot_run(f"no C++ kernel here: {kernels.why_not()}")
    return FastTarget(model, use_kernel=request.param == "kernel")


def test_the_kernel_is_a_matrix_product():
    k = kernels.kernel()
    if k is None:
        cannot_run(kernels.why_not())
    for m, n, kk in [(1, 16, 8), (7, 37, 53), (13, 100, 64), (6, 16, 1)]:
        w, x = torch.randn(n, kk), torch.randn(m, kk)
        torch.testing.assert_close(k.linear(x, k.pack(w), n), x @ w.T, atol=1e-5, rtol=1e-5)


def test_float16_panels_give_the_bits_of_float32_ones():
    """A head saved in float16 is packed in float16 (half the bytes to read): widening is exact and the sums run
    in the same order, so its products are bit-equal to those over its float32 copy, at every row count."""
    k = kernels.kernel()
    if k is None or not k.half_weights():
        cannot_run("no float16 panels on this CPU")
    w = torch.randn(70, 300).half().float()
    wide, narrow = k.pack(w), k.pack(w, True)
    assert narrow.dtype == torch.float16 and narrow.nbytes * 2 == wide.nbytes
    for m in (1, 5, 8, 13, 40):
        x = torch.randn(m, 300)
        assert torch.equal(k.linear(x, narrow, 70), k.linear(x, wide, 70)), m


def test_the_kernel_shares_a_product_among_torchs_threads():
    """Built without OpenMP, torch's parallel_for inlined into the kernel runs on one thread, whatever
    torch.set_num_threads says (it went unnoticed for weeks: 2 threads cost what 1 did)."""
    k = kernels.kernel()
    if k is None:
        cannot_run(kernels.why_not())
    before = torch.get_num_threads()
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            assert k.parallel_pieces() == n
    finally:
        torch.set_num_threads(before)


def test_a_row_gets_the_same_bits_whatever_rows_share_its_pass():
    """A token's logits must not depend on how many drafts ride along: AR's 1-row pass and a verify pass's
    rows (one block of up to 12 with AVX-512 or 6 with AVX2, or blocks taking turns over tiles of the weights)
    sum in the same order."""
    k = kernels.kernel()
    if k is None:
        cannot_run(kernels.why_not())
    w, x = torch.randn(70, 300), torch.randn(40, 300)  # 300: tiles of 64 rows (AVX-512) or 128 (AVX2) and a part
    packed = k.pack(w)
    alone = torch.cat([k.linear(x[i:i + 1], packed, 70) for i in range(40)])
    for m in (2, 6, 7, 8, 12, 13, 16, 25, 40):
        assert torch.equal(k.linear(x[:m], packed, 70), alone[:m]), m


def test_a_chain_pass_gives_each_row_the_bits_of_ars_passes(model):
    """With the extension, every step of a layer computes a row on its own: a verify pass over a chain gives
    each row exactly the logits AR's one-token passes give it, so greedy equality is exact, not near."""
    if kernels.kernel() is None:
        cannot_run(kernels.why_not())
    fast = FastTarget(model)
    prompt, chain = [1, 2, 3, 4, 10], [5, 6, 7, 8, 9, 11, 12]
    caches = fast.new_cache(), fast.new_cache()
    for cache in caches:
        fast.forward(cache, prompt, torch.arange(len(prompt)), None, 1)
    ar = [fast.forward(caches[0], [t], torch.tensor([len(prompt) + i]), None, 1)[0][0] for i, t in enumerate(chain)]
    rows, _ = fast.forward(caches[1], chain, torch.arange(len(prompt), len(prompt) + len(chain)), None, len(chain))
    assert all(torch.equal(a, r) for a, r in zip(ar, rows))


DRAFTS = {
    "chain": Draft(tokens=[5, 6, 7], parents=[-1, 0, 1]),
    "tree": Draft(tokens=[5, 9, 6, 11, 12], parents=[-1, -1, 0, 0, 1]),
    "window": Draft(tokens=[5, 6], parents=[-1, 0], window=[3, 4, 8], window_pos=[1, 2, 3],
                    window_sees=[[0, 3], [0, 3, 4], [0, 3, 4, 5]]),
}


@pytest.mark.parametrize("shape", DRAFTS)
def test_a_verify_pass_equals_the_models(model, fast, shape):
    prompt, draft = [1, 2, 3, 4, 10, 20, 30], DRAFTS[shape]
    ref, ref_cache = HFTarget(model), HFTarget(model).new_cache()
    got_cache = fast.new_cache()
    first = Draft()
    for target, cache in ((ref, ref_cache), (fast, got_cache)):  # the prefill, then the draft's pass
        verify.target_forward(target, cache, prompt[:-1], first)
    want = verify.target_forward(ref, ref_cache, prompt[-1:], draft, hidden_layers=(0, 2, -1))
    got = verify.target_forward(fast, got_cache, prompt[-1:], draft, hidden_layers=(0, 2, -1))
    torch.testing.assert_close(got.logits, want.logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(got.hidden, want.hidden, atol=ATOL, rtol=0)
    assert got_cache.get_seq_length() == ref_cache.get_seq_length()


def test_the_cache_keeps_the_accepted_path_in_place():
    cache = Cache(layers=2, kv_heads=1, head_dim=2, capacity=4)
    cache.reserve(6)  # grows past its capacity
    for i in range(6):
        cache.k[:, :, :, i] = i
    cache.length = 6
    cache.keep(2, [1, 3])  # entries 3 and 5 move to 2 and 3
    assert cache.get_seq_length() == 4 and cache.k[0, 0, 0, :4, 0].tolist() == [0, 1, 3, 5]
    cache.keep(3, [0])
    assert cache.get_seq_length() == 4


@pytest.mark.parametrize("method", ["pld", "jacobi", "lookahead", "medusa", "eagle2", "early_exit"])
def test_every_method_through_it_equals_ar_through_it(model, fast, method, tmp_path):
    from test_sliding_window import _drafter

    prompt = [7, 3, 9, 7, 3, 9, 7, 3, 12, 5]

    def tokens(drafter):
        return [t for s in decode(fast, drafter, prompt, 20, Sampler(), None) for t in s.tokens]

    assert tokens(_drafter(method, model, model, tmp_path)) == tokens(Drafter())


def test_it_runs_llama_models_on_the_cpu_in_float32_only(model):
    assert FastTarget.supports(model, "cpu", "float32") == ""
    assert "float32" in FastTarget.supports(model, "cpu", "bfloat16")
    assert "CPU" in FastTarget.supports(model, "cuda", "float32")


def test_a_batch_of_answers_is_each_answer_alone(model, fast):
    """Left-padded rows of several lengths: each row's greedy tokens are AR's for its prompt alone."""
    from paradec.train.generate import generate

    prompts = [[5, 6, 7], [9, 1, 2, 3, 4, 8, 10], [11], [3, 3, 3, 3]]
    eos = {17}
    alone = [[t for s in decode(fast, Drafter(), p, 12, Sampler(), None, eos) for t in s.tokens] for p in prompts]
    assert generate(fast, prompts, 12, Sampler(), None, eos, pad=0) == alone
    sampled = [generate(fast, prompts, 12, Sampler(temperature=1.0), torch.Generator().manual_seed(4), eos, 0)
               for _ in range(2)]
    assert sampled[0] == sampled[1] and sampled[0] != alone  # seeded, and really sampled
