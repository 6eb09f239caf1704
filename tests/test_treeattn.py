"""Tree attention's KV reads (per-branch, naive mask, DeFT) on trees worked out by hand, and
the figure of them (the Roofline page's section is tested with the page, in test_roofline)."""
from dataclasses import replace
from types import SimpleNamespace

import pytest

from paradec.costs import roofline, treeattn
from paradec.costs.roofline import MODELS
from paradec.plots import treeattn as plots
from paradec.traces.trace import Trace
from ui import sources

SMOL = MODELS["SmolLM2-135M-Instruct"].with_dtype("bfloat16")
LLAMA3 = MODELS["Llama-3.1-8B"].with_dtype("bfloat16")
CHAIN3 = [-1, 0, 1]  # pending -> a -> b -> c
FORK = [-1, -1, 0]  # pending -> a -> c, pending -> b


def test_a_chain_reads_the_context_once_unless_its_queries_are_split():
    # Q = 4 rows, c = 10: keys are the 10 cached + 4 new = 14 positions. One leaf at depth 3:
    # its sequence is 10 + 1 + 3 = 14. A 16-row block holds all 4 queries (one pass, 14);
    # 2-row blocks make 2 passes (28), 1-row blocks 4 (56). DeFT loads each position once: 14.
    assert treeattn.leaf_depths(CHAIN3) == [3]
    assert treeattn.tokens_read(CHAIN3, 10) == {"per-branch": 14, "naive mask": 14, "DeFT": 14}
    assert treeattn.tokens_read(CHAIN3, 10, q_block=2)["naive mask"] == 28
    assert treeattn.tokens_read(CHAIN3, 10, q_block=1)["naive mask"] == 56


def test_a_fork_reloads_the_context_per_branch():
    # Leaves b (depth 1) and c (depth 2): per-branch (10 + 1 + 1) + (10 + 1 + 2) = 25, the pending
    # token and the context read twice. Mask in one block and DeFT: 10 + 4 = 14.
    assert sorted(treeattn.leaf_depths(FORK)) == [1, 2]
    assert treeattn.tokens_read(FORK, 10) == {"per-branch": 25, "naive mask": 14, "DeFT": 14}
    assert treeattn.tokens_read(FORK, 10, q_block=1)["naive mask"] == 56
    # SmolLM2 in bf16: 2 (K, V) x 30 layers x 3 KV heads x 64 x 2 bytes = 23,040 bytes a position.
    assert treeattn.bytes_read(SMOL, FORK, 10) == {"per-branch": 576_000, "naive mask": 322_560, "DeFT": 322_560}


def test_no_tree_is_one_sequence_and_kv_heads_not_query_heads_count():
    assert treeattn.tokens_read([], 100) == {"per-branch": 101, "naive mask": 101, "DeFT": 101}
    full_heads = replace(LLAMA3, kv_heads=LLAMA3.heads)  # 32 KV heads instead of GQA's 8
    assert treeattn.bytes_read(full_heads, FORK, 10)["DeFT"] == 4 * treeattn.bytes_read(LLAMA3, FORK, 10)["DeFT"]


def test_attention_share_counts_weights_reads_and_writes():
    # Chain, c = 10, bf16 SmolLM2: weights 268,959,744 bytes; reads 14 x 23,040 = 322,560; the
    # 4 new positions' writes 92,160. Batch 2 doubles reads and writes, not the weights.
    w = roofline.weight_bytes(SMOL)
    assert w == 268_959_744
    assert treeattn.attention_share(SMOL, CHAIN3, 10)["DeFT"] == pytest.approx(322_560 / (w + 322_560 + 92_160))
    assert treeattn.attention_share(SMOL, CHAIN3, 10, b=2)["DeFT"] == pytest.approx(
        645_120 / (w + 645_120 + 184_320))


def test_long_context_makes_the_kv_reads_the_pass():
    twelve = [-1, -1, -1, -1, 0, 1, 2, 2, 2, 2, 3, 3]  # an EAGLE-2 tree: 8 leaves at depth 2
    short, long = (treeattn.attention_share(SMOL, twelve, c) for c in (512, 32768))
    assert short["DeFT"] < 0.05 and long["DeFT"] > 0.7  # 135M weights dominate at 512, not at 32k
    assert long["per-branch"] > 0.95 and short["per-branch"] > 5 * short["DeFT"]


def test_verify_tree_is_the_first_largest_step():
    steps = [SimpleNamespace(nodes=[SimpleNamespace(parent=p) for p in ps]) for ps in ([], FORK, CHAIN3, [-1])]
    assert treeattn.verify_tree(SimpleNamespace(steps=steps)) == FORK
    medusa = Trace.load(sources.TRACE_DIR / "medusa-greedy.json")
    parents = treeattn.verify_tree(medusa)
    assert len(parents) == max(len(s.nodes) for s in medusa.steps) and parents[0] == -1


def test_figure_bars_every_tree_and_method():
    trees = {"chain": CHAIN3, "fork": FORK}
    fig = plots.reads_figure(SMOL, "bfloat16", trees, 10, q_block=1)
    assert [tr.name for tr in fig.data] == list(treeattn.METHODS)
    # positions read, from the tests above: chain 14 / 56 / 14, fork 25 / 56 / 14; 23,040 bytes each
    read = {"per-branch": [14, 25], "naive mask": [56, 56], "DeFT": [14, 14]}
    times_deft = {"per-branch": ["1×", "1.79×"], "naive mask": ["4×", "4×"], "DeFT": ["", ""]}  # DeFT: the unit
    for bars in fig.data:
        assert list(bars.x) == ["chain<br>3 nodes, 1 leaves", "fork<br>3 nodes, 2 leaves"]
        assert list(bars.y) == pytest.approx([n * 23_040 / 1e6 for n in read[bars.name]])
        assert list(bars.text) == times_deft[bars.name]
        shares = [treeattn.attention_share(SMOL, p, 10, 1)[bars.name] * 100 for p in trees.values()]
        assert list(bars.customdata) == pytest.approx(shares)
    assert "MODEL" in fig.layout.title.text
