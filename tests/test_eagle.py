"""EAGLE-1/2/3: greedy equality with AR (random heads of both versions, static and dynamic
trees), the dynamic tree's expansion and reranking on a hand-computed example, the head's
offsets (an oracle-like head is accepted), official checkpoint layouts and the shipped heads,
deeper heads (every layer's cache), and lossless sampling. Tiny random models, one thread."""
import json

import pytest
import torch

from paradec.core import tree
from paradec.core.drafter import Drafter
from paradec.core.engine import decode
from paradec.core.sampling import Sampler
from paradec.drafters import eagle_head
from paradec.drafters.eagle import Eagle, Eagle2, Eagle3, _Nodes
from paradec.drafters.eagle_head import fuse_layers

from helpers import build, tiny_model

GREEDY = Sampler()  # frozen: one instance serves every default

pytestmark = pytest.mark.usefixtures("one_thread")

V, H = 64, 64
PROMPT = [3, 14, 15, 9, 2, 6, 3, 14]


@pytest.fixture(scope="module")
def target():
    model = tiny_model(V, seed=0, hidden=H)
    with torch.no_grad():
        model.lm_head.weight.mul_(8.0)  # peakier p: greedy paths differ from random heads' guesses
    return model


def random_head(target, version, seed=0, vocab=None, layers=1):
    ids = torch.arange(V) if version == 3 else vocab
    head = eagle_head.EagleHead(target.config, version, ids, layers)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in head.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.2)
    return head


def saved(head, target, tmp_path, name="h") -> str:
    eagle_head.save(head, tmp_path / name, target.config, {"test": True})
    return str(tmp_path / name)


def generate(model, drafter, n=30, sampler=GREEDY, gen=None):
    steps = list(decode(model, drafter, PROMPT, n, sampler, gen))
    return [t for s in steps for t in s.tokens], steps


@pytest.fixture(scope="module")
def ar_tokens(target):
    return generate(target, Drafter())[0]


@pytest.mark.parametrize("cls,kw", [
    (Eagle, {"tree": "cpu10"}), (Eagle, {"tree": "chain4"}), (Eagle, {"tree": "[[1, 0, 2], [0]]"}), (Eagle2, {}),
    (Eagle2, {"depth": 6, "top_k": 3, "total_tokens": 20}), (Eagle3, {}),
    (Eagle3, {"depth": 2, "top_k": 8, "total_tokens": 5}),
])
def test_greedy_equals_ar(target, ar_tokens, tmp_path, cls, kw):
    head = saved(random_head(target, cls.version, vocab=torch.arange(0, V, 2) if cls is Eagle2 else None),
                 target, tmp_path)
    tokens, steps = generate(target, build(cls, target, head=head, **kw))
    assert tokens == ar_tokens
    # the first step: no features yet, so no head draft (only a prompt-lookup branch, if any)
    assert len(steps[0].nodes) == len(steps[0].record.looked_up) and all(len(s.nodes) > 0 for s in steps[1:])
    for s in steps:
        assert tree.is_path([n.parent for n in s.nodes], s.accepted)


@pytest.mark.parametrize("cls", [Eagle2, Eagle3])
def test_a_deeper_head_gives_ars_tokens(target, ar_tokens, tmp_path, cls):
    """Two decoder layers, each with its own cache, cropped after every step."""
    head = saved(random_head(target, cls.version, layers=2), target, tmp_path)
    drafter = build(cls, target, head=head)
    tokens, steps = generate(target, drafter)
    assert tokens == ar_tokens and len(drafter.head.layers) == 2
    assert all(len(s.nodes) > 0 for s in steps[1:])


@pytest.mark.parametrize("cls", [Eagle2, Eagle3])
def test_a_prompt_lookup_branch_keeps_ars_tokens(target, tmp_path, cls):
    """The copied branch is verified with the tree: on a prompt that repeats itself, some steps accept its own
    nodes (after the head's), and every step's tokens are still AR's."""
    prompt = PROMPT * 3
    ar = [t for s in decode(target, Drafter(), prompt, 30, GREEDY, None) for t in s.tokens]
    head = saved(random_head(target, cls.version), target, tmp_path)
    steps = list(decode(target, build(cls, target, head=head, lookup=6), prompt, 30, GREEDY, None))
    assert [t for s in steps for t in s.tokens] == ar
    own = [s for s in steps if s.record.looked_up and any(
        n >= sum(c.kept for c in s.record.drafted or ()) for n in s.accepted)]
    assert own, "no step accepted a copied token the head had not drafted"
    for s in steps:
        assert tree.is_path([n.parent for n in s.nodes], s.record.looked_up)
        assert len(s.record.draft_q) == len(s.nodes)


@pytest.mark.parametrize("layers", [1, 2])
def test_round_trip_keeps_the_outputs(target, tmp_path, layers):
    head = random_head(target, 3, layers=layers)
    loaded, meta = eagle_head.load(saved(head, target, tmp_path))
    assert len(loaded.layers) == layers and meta["num_head_layers"] == layers
    gen = torch.Generator().manual_seed(0)
    feats, emb = torch.randn(1, 5, 3 * H, generator=gen), torch.randn(1, 5, H, generator=gen)
    pos = torch.arange(5)[None]
    a, b = head.half().float()(feats, emb, pos), loaded(feats, emb, pos)  # the file stores float16
    assert meta["test"] and torch.allclose(a, b, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("version,layers", [(1, 1), (1, 2), (3, 2), (3, 3)])
def test_cached_steps_match_one_pass(target, version, layers):
    """As the drafter feeds the head (inference mode: the extension's path): context entries through the cache,
    a few at a time, then three tree nodes under a tree mask, equal one pass from scratch over the whole
    sequence under the same mask, in every layer's cache; so does a node fed again after the nodes are cropped."""
    head = random_head(target, version, layers=layers)
    width = 3 * H if version == 3 else H
    gen = torch.Generator().manual_seed(1)
    feats, emb = torch.randn(1, 9, width, generator=gen), torch.randn(1, 9, H, generator=gen)
    pos = torch.tensor([[0, 1, 2, 3, 4, 5, 6, 6, 7]])  # entries 6 and 7: siblings; 8: a child of 6
    mask = torch.ones(9, 9, dtype=torch.bool).tril()
    mask[7, 6] = mask[8, 7] = False
    with torch.inference_mode():
        whole = head(feats, emb, pos, mask[None, None])
        cache = eagle_head.HeadCache()
        parts = [head(feats[:, :3], emb[:, :3], pos[:, :3], cache=cache)]
        parts += [head(feats[:, i : i + 1], emb[:, i : i + 1], pos[:, i : i + 1], cache=cache) for i in range(3, 6)]
        parts.append(head(feats[:, 6:], emb[:, 6:], pos[:, 6:], mask[None, None, 6:], cache))
        assert len(cache) == 9 and len(cache.kv) == layers
        cache.crop(6)
        again = head(feats[:, 7:8], emb[:, 7:8], pos[:, 7:8], cache=cache)
    assert torch.allclose(torch.cat(parts, dim=1), whole, atol=1e-4, rtol=1e-4)
    assert torch.allclose(again, whole[:, 7:8], atol=1e-4, rtol=1e-4)


class FixedScores(Eagle2):
    """EAGLE-2's tree logic on hand-set draft probabilities: each expanded node's children
    get q = probs[depth] (the same at every node of a depth), no head involved."""

    def __init__(self, probs, depth, top_k, total):
        self.depth, self.top_k, self.total, self.probs = depth, top_k, total, probs

    def grow(self):
        nodes = _Nodes()
        layer = self.add(nodes, -1)
        for _ in range(self.depth - 1):
            layer = [c for i in self._to_expand(nodes, layer) for c in self.add(nodes, i)]
        return nodes, self._select(nodes)

    def add(self, nodes, parent):
        d = 0 if parent < 0 else nodes.depth[parent]
        q = torch.tensor(self.probs[d]).log()
        return [nodes.add(10 * d + r, parent, r, float(q[r]), q) for r in self._ranks(nodes, parent)]


def test_dynamic_tree_expands_by_confidence_then_reranks():
    """top_k = 2, depth = 3; q is 0.6/0.3 at depth 1, 0.9/0.05 at depth 2, 0.45/0.4 at 3.
    Depth 1: a (0.6), b (0.3). Both expanded: aa .54, ab .03, ba .27, bb .015.
    Expand the best two of depth 2 (ab and bb are cut): aa and ba -> aaa .243, aab .216,
    baa .1215, bab .108. Rerank all ten: a .6, aa .54, b .3, ba .27 | aaa .243, aab .216, ...
    total = 4 keeps the first four; total = 6 adds aaa and aab (not ab: .03)."""
    drafter = FixedScores([[0.6, 0.3], [0.9, 0.05], [0.45, 0.4]], depth=3, top_k=2, total=4)
    nodes, keep = drafter.grow()
    names = ["a", "b", "aa", "ab", "ba", "bb", "aaa", "aab", "baa", "bab"]
    assert len(nodes.token) == 10
    expanded = {names[p] for p in nodes.parent if p >= 0}
    assert expanded == {"a", "b", "aa", "ba"}
    assert [names[i] for i in keep] == ["a", "b", "aa", "ba"]
    drafter.total = 6
    assert [names[i] for i in drafter.grow()[1]] == ["a", "b", "aa", "ba", "aaa", "aab"]


def test_head_sees_target_features_at_the_right_offset(target, tmp_path):
    """An EAGLE-1 head whose layer is switched off (zero attention and MLP) and whose fc copies
    the feature through outputs the feature f_t of its last context entry unchanged. That
    entry must be (f of the token before the pending one, the pending token): its LM-head
    guess is then the target's own greedy choice at that position, i.e. the pending token."""
    head = eagle_head.EagleHead(target.config, 1)
    with torch.no_grad():
        for p in head.parameters():
            p.zero_()
        head.fc.weight[:, H:] = torch.eye(H)  # fc(cat(emb, f)) = f
    drafter = build(Eagle, target, head=saved(head, target, tmp_path), tree="chain4")
    _, steps = generate(target, drafter, n=12)
    assert all(s.nodes[0].token == prev.tokens[-1] for prev, s in zip(steps, steps[1:]))


def test_official_layouts_load(target, tmp_path):
    """EAGLE-1: fc + layers.0.* (+ the target's embeddings) in pytorch_model.bin; EAGLE-3:
    fc, midlayer.*, norm, lm_head, d2t, t2d in model.safetensors."""
    from safetensors.torch import save_file

    cfg = {k: v for k, v in target.config.to_dict().items() if not isinstance(v, dict) or k == "rope_parameters"}
    for version, weights in ((1, "pytorch_model.bin"), (3, "model.safetensors")):
        ids = torch.tensor([5, 1, 7, 30]) if version == 3 else None
        head = random_head(target, version)
        if version == 3:
            head = eagle_head.EagleHead(target.config, 3, ids)
        state = {k.replace("layer.", "layers.0." if version == 1 else "midlayer."): v
                 for k, v in head.state_dict().items()}
        state["embed_tokens.weight"] = torch.zeros(V, H)
        if version == 3:
            state["d2t"] = ids - torch.arange(4)
            state["t2d"] = torch.zeros(V, dtype=torch.bool)
            del state["vocab_ids"]
        folder = tmp_path / f"official{version}"
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({**cfg, "draft_vocab_size": 4} if version == 3 else cfg))
        if version == 1:
            torch.save(state, folder / weights)
        else:
            save_file({k: v.contiguous() for k, v in state.items()}, str(folder / weights))
        loaded, _ = eagle_head.load(folder)
        assert loaded.version == version
        if version == 3:
            assert loaded.vocab_ids.tolist() == ids.tolist()
        feats = torch.randn(1, 3, 3 * H if version == 3 else H)
        args = (feats, torch.randn(1, 3, H), torch.arange(3)[None])
        assert torch.allclose(loaded(*args), head(*args), atol=1e-5)


def test_shipped_one_layer_heads_load_and_a_wrong_depth_is_refused(target, tmp_path):
    """The shipped heads' configs say no depth: one layer, the official names, loaded strictly. A config whose
    depth the weights do not hold is refused before any layer is built."""
    from paradec.drafters.eagle import SHIPPED

    for version, folder in SHIPPED.items():
        head, meta = eagle_head.load(folder)
        assert head.version == version and len(head.layers) == 1 and "num_head_layers" not in meta
    folder = tmp_path / "h"
    saved(random_head(target, 1), target, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "num_head_layers": 10**6}))
    with pytest.raises(ValueError, match="num_head_layers 1000000, the weights hold 1"):
        eagle_head.load(folder)


@pytest.mark.parametrize("change, words", [
    ({"intermediate_size": 10**7}, "layer.mlp.gate_proj.weight is"), ({"hidden_size": 4096}, "fc.weight is"),
])
def test_a_config_that_does_not_fit_the_weights_is_refused_before_the_head_is_built(target, tmp_path, change, words):
    """A config.json from elsewhere (a 10-million-wide MLP: 69 GB of float32 once built; Llama's default width) is
    checked against the weights' shapes on the meta device: refused at once, naming the first tensor that differs."""
    folder = tmp_path / "h"
    saved(random_head(target, 3), target, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(ValueError, match=words):
        eagle_head.load(folder)


def test_fused_layers_are_what_eagle3_reads(target, tmp_path):
    drafter = build(Eagle3, target, head=saved(random_head(target, 3), target, tmp_path))
    assert drafter.hidden_layers == fuse_layers(target.config.num_hidden_layers)


def test_bad_parameters_and_wrong_version(target, tmp_path):
    head1 = saved(random_head(target, 1), target, tmp_path)
    with pytest.raises(ValueError, match="EAGLE-3 head"):
        build(Eagle3, target, head=head1)
    with pytest.raises(ValueError, match="depth"):
        build(Eagle2, target, head=head1, depth=0)
    with pytest.raises(ValueError, match="tree must be"):
        build(Eagle, target, head=head1, tree="nope")
    with pytest.raises(ValueError, match="cannot load"):
        build(Eagle, target, head=str(tmp_path / "missing"))


@pytest.fixture(scope="module")
def sharp():
    """A tiny target with peaked p, so drafted tokens are often accepted."""
    model = tiny_model(16, seed=0, layers=1, hidden=32)
    with torch.no_grad():
        model.lm_head.weight.mul_(15.0)
    return model


def _sample(model, make, seed0, runs=1000):
    from collections import Counter

    counts, accepted, copied = Counter(), 0, 0
    for i in range(runs):
        steps = list(decode(model, make(), [1, 2, 3, 1, 2], 3, Sampler(temperature=1.0),
                            torch.Generator().manual_seed(seed0 + i)))
        counts[tuple(t for s in steps for t in s.tokens)] += 1
        accepted += sum(len(s.accepted) for s in steps)
        copied += sum(len(getattr(s.record, "looked_up", ())) for s in steps)  # EAGLE-2/3's copied branch
    return counts, accepted, copied


@pytest.fixture(scope="module")
def exact(sharp):
    from stats import exact_joint

    return exact_joint(sharp, [1, 2, 3, 1, 2], Sampler(temperature=1.0), 3)


@pytest.mark.slow
@pytest.mark.parametrize("cls", [Eagle, Eagle3])
def test_sampling_keeps_the_targets_distribution(sharp, exact, tmp_path, cls):
    """The first three tokens (the second and third from the tree) against their exact distribution under
    plain autoregressive sampling: chi-square goodness of fit at 1e-3. A head of untrained
    (default-initialised) weights: its guesses are the target's feature passed through, often accepted."""
    from stats import ALPHA, gof_pvalue

    with torch.random.fork_rng():  # the same default-initialised head whatever ran before
        torch.manual_seed(0)
        head = eagle_head.EagleHead(sharp.config, cls.version, torch.arange(16) if cls.version == 3 else None)
    folder = saved(head, sharp, tmp_path)
    kw = {"tree": "[[0], [1], [0, 0], [2]]"} if cls is Eagle else {"depth": 2, "top_k": 3, "total_tokens": 5}
    counts, accepted, copied = _sample(sharp, lambda: build(cls, sharp, head=folder, **kw), 0)
    assert accepted > 0.2 * 1000
    assert (copied > 1000) == (cls is Eagle3)  # EAGLE-3 verifies a prompt-lookup branch too (the prompt repeats "1 2")
    assert gof_pvalue(counts, exact) > ALPHA, counts.most_common(6)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["eagle", "eagle2", "eagle3"])
def test_shipped_heads_on_the_embedded_model(embedded_q4, method):
    """The shipped heads load onto the embedded model (at 4 bits, the default), give AR's tokens, and are trained: they
    get drafted tokens accepted (an untrained head's guesses almost never are)."""
    from paradec.run import run

    for prompt in ("Explain in detail how a bicycle works.", "List three facts about the Moon."):
        ar = run(embedded_q4, "ar", prompt, max_new_tokens=40)
        got = run(embedded_q4, method, prompt, max_new_tokens=40)
        assert got.token_ids == ar.token_ids
        assert sum(len(s.accepted) for s in got.steps) >= 5


def test_static_tree_brings_implied_prefixes(target, tmp_path):
    """[[1, 0, 2]] alone is the chain rank 1 -> rank 0 -> rank 2: three nodes every step."""
    drafter = build(Eagle, target, head=saved(random_head(target, 1), target, tmp_path), tree="[[1, 0, 2]]")
    _, steps = generate(target, drafter, n=10)
    drafted = [s for s in steps if s.nodes]
    assert len(drafted) == len(steps) - 1  # every step but the prefill drafts
    assert all([n.parent for n in s.nodes] == [-1, 0, 1] for s in drafted)
