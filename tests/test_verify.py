"""The verifier: the tree attention mask by hand, one target forward over a tree against
running each root-to-node path alone, KV compaction against recomputation, and greedy
acceptance on hand-made logits. (Sampling acceptance is in test_sampling.py.)"""
import pytest
import torch

from paradec.core import tree, verify
from paradec.core.sampling import Sampler
from paradec.core.steps import Draft
from paradec.core.targets import HFCache as DynamicCache
from paradec.core.targets import float_mask
from paradec.core.verify import accept, record, target_forward

from helpers import tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")

V = 64
CONTEXT = [5, 17, 3, 42, 8, 8, 23]
ATOL = 1e-5


@pytest.fixture(scope="module")
def model():
    return tiny_model(V, seed=3)


class _Cached:
    """A cache that holds `n` entries, as the verifier asks it (pass_inputs reads only its length)."""

    def __init__(self, n: int):
        self.n = n

    def get_seq_length(self) -> int:
        return self.n


def _pass(parents: list[int], cached: int, uncached: int):
    """The verify pass's inputs for a draft with these parents: what a target's forward is given."""
    draft = Draft(tokens=list(range(10, 10 + len(parents))), parents=parents)
    return verify.pass_inputs(_Cached(cached), list(range(uncached)), draft)


def test_the_tree_mask_a_pass_gets_hand_drawn():
    # 2 cached context tokens x0 x1, 2 uncached u0 P (P = the pending token), then the tree
    #   P -> a[0], P -> b[1], a -> c[2]
    X, _ = 1, 0
    expected = torch.tensor([
        # x0 x1 u0 P  a  b  c
        [X, X, X, _, _, _, _],  # u0: causal
        [X, X, X, X, _, _, _],  # P:  causal
        [X, X, X, X, X, _, _],  # a:  context + P + itself
        [X, X, X, X, _, X, _],  # b:  not its sibling a
        [X, X, X, X, X, _, X],  # c:  its ancestor a, not b
    ], dtype=torch.bool)
    ids, positions, allowed, keep = _pass([-1, -1, 0], cached=2, uncached=2)
    assert torch.equal(allowed, expected) and keep == 4
    assert positions.tolist() == [2, 3, 4, 4, 5]  # cache length + depth: the siblings a and b share one
    mask = float_mask(allowed, torch.float32)  # what Hugging Face's forward is given (HFTarget)
    assert mask.shape == (1, 1, 5, 7) and mask.dtype == torch.float32
    assert torch.equal(mask[0, 0] == 0, expected)
    assert torch.all(mask[0, 0][~expected] == torch.finfo(torch.float32).min)


def test_the_tree_mask_when_only_the_pending_token_is_uncached():
    # the usual step: everything cached but the pending token; nodes a[0] and its child b[1]
    X, _ = 1, 0
    expected = torch.tensor([
        # x0 x1 x2 P  a  b
        [X, X, X, X, _, _],  # P
        [X, X, X, X, X, _],  # a
        [X, X, X, X, X, X],  # b
    ], dtype=torch.bool)
    assert torch.equal(_pass([-1, 0, -1], cached=3, uncached=1)[2][:3, :6], expected)  # a third node: a tree
    assert _pass([-1, 0], cached=3, uncached=1)[2] is None  # a chain: the causal mask, which the model builds itself


def _alone(model, tokens):
    """Next-token logits after `tokens`, in a fresh forward with no cache: the reference."""
    with torch.no_grad():
        return model(input_ids=torch.tensor([tokens])).logits[0, -1].float()


def _cache_of(model, tokens):
    cache = DynamicCache()
    if tokens:
        with torch.no_grad():
            model(input_ids=torch.tensor([tokens]), cache=cache, use_cache=True)
    return cache


TREES = {
    "empty": ([], []),
    "chain": ([-1, 0, 1], [9, 30, 2]),
    "hand-drawn": ([-1, -1, 0, 0, 1, 2], [9, 11, 30, 30, 4, 60]),  # the tree of test_tree.py
    "siblings with the same token": ([-1, -1, 1], [7, 7, 7]),
}


@pytest.mark.parametrize("name", TREES)
@pytest.mark.parametrize("cached", [0, 4, len(CONTEXT) - 1])  # 0: the first step, prefill + tree together
def test_each_node_sees_only_its_own_path(model, name, cached):
    parents, tokens = TREES[name]
    cache = _cache_of(model, CONTEXT[:cached])
    draft = Draft(tokens=tokens, parents=parents)
    with torch.no_grad():
        logits = target_forward(model, cache, CONTEXT[cached:], draft).logits
    assert logits.shape == (len(tokens) + 1, V)
    assert cache.get_seq_length() == len(CONTEXT) + len(tokens)
    torch.testing.assert_close(logits[0], _alone(model, CONTEXT), atol=ATOL, rtol=0)
    for i in range(len(tokens)):
        path = [tokens[j] for j in tree.ancestors(parents, i)]
        torch.testing.assert_close(logits[i + 1], _alone(model, CONTEXT + path), atol=ATOL, rtol=0)


@pytest.mark.parametrize(
    "parents, keep",
    [
        ([-1, 0, 1, 2], [0, 1]),  # a prefix of a chain: the crop path
        ([-1, 0, 1, 2], [0, 1, 2, 3]),  # the whole chain: nothing to drop
        ([-1, 0, 1, 2], []),  # nothing accepted
        ([-1, -1, 0, 0, 1, 2], [0]),  # a prefix of the node list in a tree: crop
        ([-1, -1, 0, 0, 1, 2], [0, 2, 5]),  # a deep path that skips nodes: the index path
        ([-1, -1, 0, 0, 1, 2], [1, 4]),  # the second branch
        ([-1, -1, 0, 0, 1, 2], [0, 3]),
    ],
)
def test_compaction_equals_recomputation(model, parents, keep):
    tokens = [9, 11, 30, 31, 4, 60][: len(parents)]
    cache = _cache_of(model, CONTEXT[:-1])
    draft = Draft(tokens=tokens, parents=parents)
    prefix = len(CONTEXT)
    with torch.no_grad():
        target_forward(model, cache, CONTEXT[-1:], draft)
    cache.keep(prefix, keep)
    assert cache.get_seq_length() == prefix + len(keep)
    committed = CONTEXT + [tokens[i] for i in keep]
    nxt = 13  # the token the target adds after the path; its KV is computed by the next pass
    with torch.no_grad():
        got = model(input_ids=torch.tensor([[nxt]]), cache=cache, use_cache=True).logits[0, -1]
    torch.testing.assert_close(got, _alone(model, committed + [nxt]), atol=ATOL, rtol=0)


def _logits(rows):
    """(N+1, V) logits whose argmax at row r is rows[r]."""
    out = torch.zeros(len(rows), V)
    for r, tok in enumerate(rows):
        out[r, tok] = 5.0
    return out


def test_greedy_accepts_the_longest_agreeing_path_trying_siblings_in_order():
    # P -> a(10), P -> b(20); b -> c(30), b -> d(40); d -> e(50)
    draft = Draft(tokens=[10, 20, 30, 40, 50], parents=[-1, -1, 1, 1, 3])
    # target argmax: after P 20 (b), after a 1, after b 40 (d), after c 1, after d 50 (e), after e 7
    logits = _logits([20, 1, 40, 1, 50, 7])
    out = accept(draft, logits, Sampler(), None)
    assert out.path == [1, 3, 4]
    assert out.last == 7 and out.last_origin == "bonus"
    assert out.status == ["rejected", "accepted", "rejected", "accepted", "accepted"]
    nodes, last_top, residual_top = record(draft, logits, out, Sampler())  # the trace's view, built afterwards
    assert [n.status for n in nodes] == out.status and [n.depth for n in nodes] == [1, 1, 2, 2, 3]
    assert nodes[0].p == pytest.approx(float(torch.softmax(logits[0], -1)[10]), abs=1e-6)  # tested after P
    assert nodes[2].p_top[0][0] == 40 and nodes[4].p_top[0][0] == 50  # each node's p is its parent's row
    assert last_top[0][0] == 7 and residual_top is None


def test_greedy_rejects_everything():
    draft = Draft(tokens=[10, 11], parents=[-1, 0])
    out = accept(draft, _logits([12, 11, 3]), Sampler(), None)
    assert out.path == []
    assert out.last == 12 and out.last_origin == "resampled"
    assert out.status == ["rejected", "unreached"]


def test_no_draft_is_one_target_token():
    out = accept(Draft(), _logits([33]), Sampler(), None)
    assert out.path == [] and out.status == []
    assert out.last == 33 and out.last_origin == "target"


def test_hidden_states_of_each_node_are_those_of_its_path(model):
    """Drafters that read the target's features (Medusa, EAGLE) get, per asked layer, each
    row's hidden state: the same as running that node's path alone."""
    parents, tokens = TREES["hand-drawn"]
    cache = _cache_of(model, CONTEXT[:-1])
    with torch.no_grad():
        out = target_forward(model, cache, CONTEXT[-1:], Draft(tokens=tokens, parents=parents), hidden_layers=(1, -1))
        assert out.hidden.shape == (2, len(tokens) + 1, model.config.hidden_size)
        for i in range(-1, len(tokens)):
            path = CONTEXT + [tokens[j] for j in tree.ancestors(parents, i)]  # i = -1: the pending token
            alone = model(input_ids=torch.tensor([path]), output_hidden_states=True).hidden_states
            torch.testing.assert_close(out.hidden[0, i + 1], alone[1][0, -1], atol=ATOL, rtol=0)
            torch.testing.assert_close(out.hidden[1, i + 1], alone[-1][0, -1], atol=ATOL, rtol=0)
    assert target_forward(model, _cache_of(model, CONTEXT[:-1]), CONTEXT[-1:], Draft()).hidden is None


def test_a_sampled_node_records_p_and_q_on_every_token_either_top_list_names():
    """The microscope's simulation needs both p and q on a token to give it its own bar: the target's top
    token, outside the draft's top-k, must not vanish into 'other'."""
    from paradec.plots.microscope import OTHER, buckets

    target = torch.full((2, V), -9.0)
    target[0, 3], target[0, 4] = 4.0, 2.0  # the target prefers 3, then 4 ...
    q = torch.full((V,), 1e-4)
    q[4], q[5:16] = 0.5, 0.04  # ... the draft puts 4 first and never ranks 3 in its top ten
    q = q / q.sum()
    draft = Draft(tokens=[4], parents=[-1], q=[q])
    sampler = Sampler(temperature=1.0)
    out = accept(draft, target, sampler, torch.Generator().manual_seed(0))
    node = record(draft, target, out, sampler)[0][0]
    p_tokens, q_tokens = {k for k, _ in node.p_top}, {k for k, _ in node.q_top}
    assert p_tokens == q_tokens and 3 in q_tokens  # each list names the other's tokens
    assert dict(node.q_top)[3] == pytest.approx(float(q[3]), abs=1e-6)
    keys, p, _ = buckets(node)
    assert keys[0] == 3 and keys[-1] == OTHER and p[-1] < 0.01  # the target's top token has its own bar


def test_pass_ms_times_every_size_of_every_forward(tiny_loaded, monkeypatch):
    """The cost probe times each forward at each size `repeats` times, and each timed pass is one chain verify
    pass over exactly n tokens after the cached context."""
    import paradec.core.verify as verify

    seen = []
    real = verify.target_forward
    monkeypatch.setattr(verify, "target_forward", lambda t, c, u, d: seen.append(len(u) + len(d.tokens)) or
                        real(t, c, u, d))
    times = verify.pass_ms({"a": tiny_loaded.decoder, "b": tiny_loaded.model}, [5, 6, 7], (1, 4), repeats=2)
    assert {k: {n: len(v) for n, v in t.items()} for k, t in times.items()} == {"a": {1: 2, 4: 2}, "b": {1: 2, 4: 2}}
    assert all(ms > 0 for t in times.values() for v in t.values() for ms in v)
    assert seen == [3, 1, 3, 1, 3, 4, 3, 4] * 2  # context, then the pass; sizes and forwards interleaved
