"""Medusa: tree buffers from medusa_choices, greedy equality with AR, the heads' offsets
(oracle heads are always accepted), the official checkpoint layout, typical acceptance,
and lossless sampling end to end. Tiny random models, one thread."""
import json

import pytest
import torch

from paradec.core import tree
from paradec.core.drafter import Drafter
from paradec.core.engine import decode
from paradec.core.sampling import Sampler
from paradec.core.steps import Draft
from paradec.core.verify import accept
from paradec.drafters import medusa_heads
from paradec.drafters.medusa import Medusa

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


def random_heads(num=4, layers=1, vocab=0, ids=None, seed=0):
    heads = medusa_heads.MedusaHeads(H, num, layers, vocab, ids)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in heads.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
    return heads


def saved(heads, tmp_path, name="h") -> str:
    folder = tmp_path / name
    folder.mkdir()
    medusa_heads.save(heads, folder / medusa_heads.OURS)
    return str(folder)


def generate(model, drafter, n=30, sampler=GREEDY, gen=None, prompt=PROMPT):
    steps = list(decode(model, drafter, prompt, n, sampler, gen))
    return [t for s in steps for t in s.tokens], steps


def test_tree_buffers_from_hand_written_choices():
    """    P
         /   \\
      [0]a    [1]b          paths given unsorted, [0, 1] without its prefix [0] listed
      /  \\      \\
  [0,0]c [0,1]d  [1,0]e
     |
  [0,0,0]f"""
    choices = [[1], [0, 0, 0], [0, 1], [1, 0], [0, 0]]
    nodes, parents = tree.paths_to_tree(choices)
    assert nodes == [(0,), (1,), (0, 0), (0, 1), (1, 0), (0, 0, 0)]
    assert parents == [-1, -1, 0, 0, 1, 2]
    assert tree.depths(parents) == [1, 1, 2, 2, 2, 3]
    assert [tree.ancestors(parents, i) for i in range(6)] == [[0], [1], [0, 2], [0, 3], [1, 4], [0, 2, 5]]
    x, o = True, False
    assert tree.mask_rows(parents) == [  # row 0 = the pending token, then a..f
        [x, o, o, o, o, o, o],
        [x, x, o, o, o, o, o],
        [x, o, x, o, o, o, o],
        [x, x, o, x, o, o, o],
        [x, x, o, o, x, o, o],
        [x, o, x, o, o, x, o],
        [x, x, o, x, o, o, x],
    ]
    for bad in ([[]], [[0, -1]], [["a"]]):
        with pytest.raises(ValueError):
            tree.paths_to_tree(bad)


@pytest.mark.parametrize("tree_name", ["chain4", "cpu12", "wide16", "[[2], [0, 3], [1, 1, 1]]"])
@pytest.mark.parametrize("kind", ["shared", "subset", "official"])
def test_greedy_equals_ar(target, tmp_path, tree_name, kind):
    heads = {"shared": lambda: random_heads(), "subset": lambda: random_heads(ids=torch.arange(0, V, 2)),
             "official": lambda: random_heads(vocab=V)}[kind]()
    ar = generate(target, Drafter())[0]
    for acceptance in ("exact", "typical"):  # at temperature 0 typical acceptance is greedy matching
        drafter = build(Medusa, target, heads=saved(heads, tmp_path, acceptance), tree=tree_name, acceptance=acceptance)
        out, steps = generate(target, drafter)
        assert out == ar
        assert not steps[0].nodes and all(len(s.nodes) == len(steps[1].nodes) for s in steps[1:])
        assert all(tree.is_path([n.parent for n in s.nodes], s.accepted) for s in steps)


class Oracle:
    """Stands in for the heads: finds which position of AR's own sequence the hidden state
    h belongs to (nearest hidden state of one teacher-forced pass) and has head k name the
    token at that position + 1 + k, with rank 1 a wrong token. Right offsets: all accepted."""

    def __init__(self, model, reference: list[int], heads: int):
        with torch.no_grad():
            self.hidden = model(torch.tensor([reference]), output_hidden_states=True).hidden_states[-1][0]
        self.reference, self.heads = reference, heads

    def logits(self, h, lm, n):
        s = int(torch.cdist(h[None], self.hidden).argmin())
        out = torch.zeros(n, V)
        for k in range(1, n + 1):
            token = self.reference[s + 1 + k]
            out[k - 1, token], out[k - 1, (token + 1) % V] = 10.0, 5.0
        return out


@pytest.mark.parametrize("tree_name", ["chain4", "cpu12"])
def test_oracle_heads_are_always_accepted(target, tmp_path, tree_name):
    n = 40
    reference = PROMPT + generate(target, Drafter(), n + 8)[0]
    drafter = build(Medusa, target, heads=saved(random_heads(), tmp_path), tree=tree_name)
    drafter.heads, drafter.lm, drafter.ids = Oracle(target, reference, 4), None, None
    out, steps = generate(target, drafter, n)
    assert out == reference[len(PROMPT) : len(PROMPT) + n]
    assert [len(s.accepted) for s in steps[1:-1]] == [4] * (len(steps) - 2)  # every depth, every step
    assert [len(s.tokens) for s in steps[:-1]] == [1] + [5] * (len(steps) - 2)  # the prefill drafts nothing


def test_official_checkpoint_layout(target, tmp_path):
    """A synthetic checkpoint in FasterDecoding/Medusa's `medusa_head` layout, as safetensors
    and as a .pt state dict: keys {i}.{j}.linear.weight|bias and {i}.{layers}.weight."""
    from safetensors.torch import save_file

    gen = torch.Generator().manual_seed(1)
    state = {}
    for i in range(3):
        for j in range(2):
            state[f"{i}.{j}.linear.weight"] = torch.randn(H, H, generator=gen) * 0.2
            state[f"{i}.{j}.linear.bias"] = torch.randn(H, generator=gen) * 0.2
        state[f"{i}.2.weight"] = torch.randn(V, H, generator=gen)
    (tmp_path / "st").mkdir()
    save_file(state, str(tmp_path / "st" / "medusa_lm_head.safetensors"))
    torch.save(state, tmp_path / "medusa_lm_head.pt")
    h = torch.randn(H, generator=gen)
    for path in (tmp_path / "st", tmp_path / "medusa_lm_head.pt"):
        heads = medusa_heads.load(path)
        assert (heads.num_heads, heads.layers, heads.own_lm_heads) == (3, 2, True)
        for i in range(3):
            x = h
            for j in range(2):
                x = x + torch.nn.functional.silu(state[f"{i}.{j}.linear.weight"] @ x + state[f"{i}.{j}.linear.bias"])
            torch.testing.assert_close(heads.logits(h, None)[i], state[f"{i}.2.weight"] @ x)
        out = generate(target, build(Medusa, target, heads=str(path), tree="[[0, 0, 0], [1], [2, 1]]"))[0]
        assert out == generate(target, Drafter())[0]


def test_official_heads_by_repo_id(tmp_path, monkeypatch):
    """A hub id fetches only the heads file (here a stand-in for snapshot_download)."""
    import huggingface_hub

    heads = random_heads(num=2, vocab=V)
    from safetensors.torch import save_file

    save_file({k: v.contiguous() for k, v in heads.heads.state_dict().items()},
              str(tmp_path / "medusa_lm_head.safetensors"))
    asked = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download",
                        lambda repo, allow_patterns: asked.append(repo) or str(tmp_path))
    assert medusa_heads.load("FasterDecoding/medusa-tiny").num_heads == 2 and asked == ["FasterDecoding/medusa-tiny"]

    def offline(repo, allow_patterns):
        raise OSError("offline\nmore")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(ValueError, match="cannot fetch Medusa heads 'Org/other': offline$"):
        medusa_heads.load("Org/other")


def test_heads_start_as_the_targets_next_token_head():
    heads = medusa_heads.MedusaHeads(H, 3)  # zero block weights: h + SiLU(b)
    with torch.no_grad():
        for head in heads.heads:
            head[0].linear.bias.zero_()
    h = torch.randn(H)
    torch.testing.assert_close(heads.features(h), h.expand(3, H))


@pytest.mark.parametrize("params, message", [
    ({"tree": "nope"}, "tree must be"), ({"tree": "[[0, 0, 0, 0, 0]]"}, "only 4 heads"),
    ({"tree": "[[70]]"}, "rank 70"), ({"acceptance": "lossy"}, "acceptance"), ({"epsilon": 0.0}, "epsilon"),
])
def test_bad_parameters(target, tmp_path, params, message):
    with pytest.raises(ValueError, match=message):
        build(Medusa, target, heads=saved(random_heads(), tmp_path), **params)


def test_heads_must_fit_the_target(tmp_path):
    other = tiny_model(V, hidden=32)
    with pytest.raises(ValueError, match="hidden size"):
        build(Medusa, other, heads=saved(random_heads(), tmp_path))
    with pytest.raises(ValueError, match="no Medusa heads"):
        build(Medusa, other, heads=str(tmp_path))


def test_typical_acceptance_by_hand():
    """p(token) > min(eps, delta * exp(-H(p))) per node; the deepest passing path wins."""
    sharp = torch.tensor([0.9, 0.05, 0.03, 0.02])  # low entropy: threshold eps = 0.09
    flat = torch.full((4,), 0.25)  # H = ln 4: threshold 0.3 / 4 = 0.075
    #          pending   a=0      b=1     c=2 (under b)
    logits = torch.stack([sharp, flat, flat, flat]).log()
    draft = Draft(tokens=[0, 1, 2], parents=[-1, -1, 1], typical=(0.09, 0.3))
    out = accept(draft, logits, Sampler(temperature=1.0), torch.Generator().manual_seed(0))
    # a passes (0.9); b fails (0.05 < 0.09), so c is never reached: a alone is the path
    assert out.path == [0] and out.status == ["accepted", "rejected", "unreached"]
    assert out.thresholds[:2] == [0.09, 0.09]
    draft = Draft(tokens=[0, 1, 2], parents=[-1, -1, 1], typical=(0.09, 0.3))
    logits = torch.stack([flat, flat, flat, flat]).log()  # every node passes: the deepest wins
    out = accept(draft, logits, Sampler(temperature=1.0), torch.Generator().manual_seed(0))
    assert out.path == [1, 2] and out.last_origin == "bonus"
    assert out.thresholds == pytest.approx([0.075] * 3, abs=1e-4)


def test_lossy_label(target, tmp_path):
    from paradec import methods

    assert methods.lossy("medusa", {"acceptance": "typical"}).startswith("medusa acceptance=typical is LOSSY")
    assert methods.lossy("medusa", {"acceptance": "exact"}) == methods.lossy("pld", {}) == ""
    steps = generate(target, build(Medusa, target, heads=saved(random_heads(), tmp_path), acceptance="typical"), 6)[1]
    assert {s.record.acceptance for s in steps} == {"typical (LOSSY)"}


@pytest.mark.slow
def test_shipped_heads_greedy_equal_ar_on_the_embedded_model(embedded_q4):
    from paradec.run import run

    for prompt in ("Write a haiku about the sea.", "List three prime numbers and explain why they are prime."):
        ar = run(embedded_q4, "ar", prompt, max_new_tokens=40)
        med = run(embedded_q4, "medusa", prompt, max_new_tokens=40)
        assert med.token_ids == ar.token_ids
        assert med.accepted_drafts > 0 and med.tau > 1.0
        assert json.loads(json.dumps(med.params))["tree"] == ""
        # the page draws the heads' top-k grid with no tokenizer: every token there has its text
        assert all(str(t) in med.token_text for s in med.steps for row in s.record.head_top for t, _ in row)


@pytest.mark.slow
def test_sampling_keeps_the_targets_distribution(tmp_path):
    """The first three tokens (the second and third come from the tree) of Medusa with exact
    acceptance against their exact distribution under plain autoregressive sampling (goodness of fit at 1e-3)."""
    from collections import Counter

    from stats import ALPHA, exact_joint, gof_pvalue

    v, runs = 16, 1000
    model = tiny_model(v, seed=0, layers=1, hidden=32)
    with torch.no_grad():
        model.lm_head.weight.mul_(15.0)
    heads = medusa_heads.MedusaHeads(32, 2)
    folder = saved(heads, tmp_path)  # untrained: plausible tokens (the target's own next-token guess)
    sampler, prompt = Sampler(temperature=1.0), [1, 2, 3, 1, 2]

    def sample(make, seed0):
        counts, accepted = Counter(), 0
        for i in range(runs):
            out, steps = generate(model, make(), 3, sampler, torch.Generator().manual_seed(seed0 + i), prompt)
            counts[tuple(out)] += 1
            accepted += sum(len(s.accepted) for s in steps)
        return counts, accepted

    counts, accepted = sample(lambda: build(Medusa, model, heads=folder, tree="[[0, 0], [1], [2]]"), 0)
    assert accepted > 0.2 * runs
    assert gof_pvalue(counts, exact_joint(model, prompt, sampler, 3)) > ALPHA, counts.most_common(6)


def test_page_views_of_a_trace(target, tmp_path):
    """paradec.plots.medusa (no torch) on a real run: paths, winner, per-head acceptance."""
    from paradec.plots import medusa as views
    from paradec.traces.trace import Trace

    n = 30
    reference = PROMPT + generate(target, Drafter(), n + 8)[0]
    drafter = build(Medusa, target, heads=saved(random_heads(), tmp_path), tree="[[0, 0, 0], [1, 1], [2]]")
    drafter.heads, drafter.lm, drafter.ids = Oracle(target, reference, 4), None, None
    steps = generate(target, drafter, n)[1]
    trace = Trace(method="medusa", params={}, model="tiny", prompt="", prompt_ids=PROMPT, sampling={},
                  max_new_tokens=n, steps=steps)
    assert views.node_paths(trace, 1) == [[0], [1], [2], [0, 0], [1, 1], [0, 0, 0]]
    assert views.winner(trace, 1) == [0, 0, 0] and views.winner(trace, 0) == []
    rows = views.node_rows(trace, 1)
    assert [(r["node"], r["mask row"], r["head"], r["path"]) for r in rows][3] == (3, 4, 2, "[0, 0]")
    per_head = views.head_acceptance(trace)
    assert [h["head"] for h in per_head] == [1, 2, 3]
    assert per_head[0]["rate"] == 1.0 and per_head[2]["given_previous"] > 0.8  # the last step may be clipped
    fig = views.heads_figure(trace, 1)
    assert len(fig.data[0].z) == 3 and len(fig.layout.shapes) == 6  # one outline per node


def test_packed_heads_are_the_drafters_own_and_score_as_the_loaded_ones(target, tmp_path):
    """On the CPU in float32 the drafter packs its heads' products for paradec's kernel: a copy, so the loaded
    heads (shared by every run) keep plain nn.Linear layers, and the packed heads give the same logits."""
    from paradec.cpu import kernels
    from paradec.cpu.fast import PackedLinear

    ids = torch.arange(0, V, 2)
    folder = saved(random_heads(ids=ids), tmp_path)
    drafter = build(Medusa, target, heads=folder)
    shared = medusa_heads.load(folder)
    assert not any(isinstance(m, PackedLinear) for m in shared.modules())
    assert any(isinstance(m, PackedLinear) for m in drafter.heads.modules()) == (kernels.kernel() is not None)
    h = torch.randn(H)
    with torch.inference_mode():
        want = shared.logits(h, target.lm_head.weight[ids], 4)
        torch.testing.assert_close(drafter.heads.logits(h, drafter.lm, 4), want, rtol=1e-5, atol=1e-5)
