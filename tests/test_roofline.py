"""The roofline and the speculative cost model against numbers worked out by hand, and the
machine probe (kept short) with its cache."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from paradec.costs import machine, roofline, speccost
from paradec.costs.roofline import HARDWARE, MODELS
from paradec.plots import roofline as plots
from paradec.plots.style import COLORS
from paradec.traces.trace import Trace
from ui import sources

from helpers import APP

H100 = HARDWARE["H100 SXM"]
LLAMA2 = MODELS["Llama-2-7B / Vicuna-7B"]
LLAMA3 = MODELS["Llama-3.1-8B"]
SMOL = MODELS["SmolLM2-135M-Instruct"]


def test_7b_decode_on_an_h100_is_bandwidth_bound_at_about_4_ms():
    # Per layer 4·4096² (q, k, v, o) + 3·4096·11008 (MLP) = 202,375,168 weights; 32 layers plus
    # the 32000 x 4096 LM head = 6,607,077,376 weights, x 2 bytes = 13,214,154,752 bytes.
    # 13.2 GB / 3.35 TB/s = 3.94 ms: the "about 14 GB / 3.35 TB/s ≈ 4.2 ms" (7B x 2 bytes).
    m = LLAMA2.with_dtype("bfloat16")
    assert roofline.weight_bytes(m) == 13_214_154_752
    cost = roofline.forward_cost(m, n=1, c=0)
    assert roofline.memory_bound(H100, "bfloat16", cost)
    t = roofline.seconds(H100, "bfloat16", cost)
    assert t == pytest.approx(cost.bytes / 3.35e12)
    assert t == pytest.approx(4.2e-3, rel=0.07)
    assert roofline.params(LLAMA2) == pytest.approx(6.74e9, rel=0.01)


def test_kv_bytes_count_only_the_kv_heads():
    # Llama-3.1-8B: 32 layers, 8 KV heads of 128, bf16: K and V = 2·32·8·128·2 = 131,072 bytes a
    # token (a model with 32 KV heads would need 4x). With 1000 cached tokens, 1 new, batch 2:
    # read 1001 positions, write 1, for each sequence: 2 · 131,072 · 1002 = 262,668,288 bytes.
    m = LLAMA3.with_dtype("bfloat16")
    assert roofline.kv_bytes_per_token(m) == 131_072
    assert roofline.kv_bytes(m, n=1, c=1000, b=2) == 262_668_288
    assert roofline.forward_cost(m, 1, 1000, 2).bytes == roofline.weight_bytes(m) + 262_668_288


def test_intensity_grows_with_the_tokens_in_a_pass_and_the_ridge_is_peak_over_bandwidth():
    intensities = [roofline.forward_cost(SMOL, n, c=100).intensity for n in (1, 2, 4, 8, 16, 64, 256)]
    assert intensities == sorted(intensities) and intensities[-1] > 50 * intensities[0]
    assert H100.ridge("bfloat16") == pytest.approx(989.5e12 / 3.35e12)  # about 295 FLOPs a byte
    ridge = H100.ridge("bfloat16")
    assert roofline.attainable(H100, "bfloat16", ridge / 10) == pytest.approx(H100.peak("bfloat16") / 10)
    assert roofline.attainable(H100, "bfloat16", ridge * 10) == H100.peak("bfloat16")


def test_lm_head_rows_and_batch_scale_the_flops():
    one = roofline.forward_cost(SMOL, 8, c=0, logit_rows=1)
    every = roofline.forward_cost(SMOL, 8, c=0)
    assert every.flops - one.flops == 7 * 2 * SMOL.hidden * SMOL.vocab
    assert roofline.forward_cost(SMOL, 8, c=0, b=4).flops == 4 * every.flops


def test_presets_have_a_source_and_a_chip_without_bfloat16_says_so():
    assert all(h.source and h.bandwidth > 0 and h.flops for h in HARDWARE.values())
    with pytest.raises(KeyError, match="bfloat16"):
        HARDWARE["T4"].peak("bfloat16")


def test_a_shape_without_grouped_queries_or_a_head_size_takes_them_from_its_heads():
    m = roofline.ModelShape("x", 2, 64, 4, 4, 128, 100, False)
    assert m.kv_heads == 4 and m.head_dim == 16 and not m.tied


@pytest.mark.slow
def test_the_smollm2_preset_is_the_embedded_model():
    from paradec.models import embedded_path

    c = json.loads((embedded_path() / "config.json").read_text())
    got = (c["num_hidden_layers"], c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"],
           c["intermediate_size"], c["vocab_size"], c["tie_word_embeddings"], c["head_dim"])
    assert got == (SMOL.layers, SMOL.hidden, SMOL.heads, SMOL.kv_heads, SMOL.intermediate, SMOL.vocab, SMOL.tied,
                   SMOL.head_dim)


def test_a_recorded_steps_verify_pass():
    t = sources.load(sources.TRACE_DIR / "sps-greedy.json")
    first, later = t.steps[0], t.steps[1]
    # the prefill: the whole prompt uncached, logits from its last row (the pending token) on
    assert roofline.verify_pass(first) == (first.verified, 0, len(first.nodes) + 1)
    assert roofline.verify_pass(later) == (len(later.nodes) + 1, later.context_len - 1, len(later.nodes) + 1)


def test_break_even_on_a_worked_example():
    # In AR steps: draft 0.3 + verify 1.5 (a CPU verifying 8 tokens) + overhead 0.2 = 2.0, so
    # τ = 2 breaks even, τ = 1.5 runs at 1.5/2 = 0.75x and τ = 3 at 1.5x.
    step = speccost.SpecStep(ar=1.0, draft=0.3, verify=1.5, overhead=0.2)
    assert step.break_even_tau == pytest.approx(2.0)
    assert step.speedup(1.5) == pytest.approx(0.75) and step.speedup(3.0) == pytest.approx(1.5)
    # A 4-token chain reaches τ = 2 when 1 + α + α² + α³ + α⁴ = 2: α = 0.519 (α = 0.5 gives 1.9375).
    alpha = speccost.alpha_for_tau(2.0, 4)
    assert alpha == pytest.approx(0.519, abs=0.001)
    assert speccost.chain_tau(alpha, 4) == pytest.approx(2.0)
    assert speccost.alpha_for_tau(6.0, 4) is None  # more than k + 1 tokens a step is impossible


def test_speculation_stops_paying_as_the_batch_grows():
    # τ = 3 with an 8-token tree, 128 cached tokens: at batch 1 the verify pass is memory-bound and
    # costs about an AR step; by batch 128 it is compute-bound (9 tokens x 128 sequences x 16 GFLOP
    # = 18 ms) while AR still waits on memory (about 5 ms): 3 · 5.1 / (18.4 + 0.5) = 0.8x.
    def speedup(batch):
        return speccost.predict(H100, LLAMA3, "bfloat16", tree=8, draft=0.1, context=128, batch=batch).speedup(3.0)

    assert speedup(1) > 2.5
    losing = speccost.first_losing([1, 2, 4, 8, 16, 32, 64, 128, 256], speedup)
    assert losing == 128 and speedup(64) > 1
    assert speccost.first_losing([1, 2], lambda b: 2.0) is None


def test_measured_costs_explain_the_recorded_losing_runs():
    # The arena set: the same prompt decoded by every method in one process on this CPU. A run that loses by
    # more than 5% (one prompt's noise: EAGLE-3 once lost by 0.4% where the model gave it 1.03x) loses in the
    # model too.
    runs = {f.stem: Trace.load(f) for f in sources.ARENA_DIR.glob("*.json")}
    assert sum(t.wall_s > 1.05 * runs["ar"].wall_s for t in runs.values()) >= 3  # the test has losers to explain
    for name, t in runs.items():
        cost, tau = speccost.measured(t, runs["ar"])
        if t.wall_s > 1.05 * runs["ar"].wall_s:
            assert tau < cost.break_even_tau and cost.speedup(tau) < 1.0, name


def test_probe_and_its_cache(tmp_path, monkeypatch):
    record = machine.probe(threads=1, seconds=0.02)
    assert record["float32_flops"] > 1e8 and record["bandwidth"] > 1e8 and record["threads"] == 1
    monkeypatch.setattr(machine, "probe", lambda threads: record)
    hw = machine.this_machine(tmp_path)
    assert hw.flops == {"float32": record["float32_flops"]} and "1 thread" in hw.name
    monkeypatch.setattr(machine, "probe", lambda threads: pytest.fail("the cache was not used"))
    assert machine.this_machine(tmp_path) == hw
    described = machine.describe()
    assert {"cpu", "cores", "torch_threads", "torch"} <= set(described)


# ---------------------------------------------------------------- figures and the page

def test_roofline_figure_puts_each_pass_on_the_roof_and_the_step_at_its_measured_time():
    step = {"label": "sps step 2", "n": 5, "c": 40, "rows": 5, "measured_s": 0.3}
    fig = plots.roofline_figure(H100, SMOL, "float32", 512, 1, step)
    traces = {tr.name: tr for tr in fig.data if tr.name}
    m, peak = SMOL.with_dtype("float32"), H100.peak("float32")
    passes = {"verify k drafted": [roofline.forward_cost(m, k + 1, 512) for k in plots.VERIFY_KS],
              "AR decode (1 token)": [roofline.forward_cost(m, 1, 512)],
              "prefill (512 tokens)": [roofline.forward_cost(m, 512, 0, logit_rows=1)]}
    for name, costs in passes.items():  # the model's time is the roof's: every pass sits on it
        x = [c.intensity for c in costs]
        assert list(traces[name].x) == pytest.approx(x)
        assert list(traces[name].y) == pytest.approx([roofline.attainable(H100, "float32", i) for i in x])
    # one AR token: about 0.5 FLOP a byte (4-byte weights), 512 prompt tokens: about 217; the ridge: 20
    assert "memory-bound" in traces["AR decode (1 token)"].hovertemplate
    assert "compute-bound" in traces["prefill (512 tokens)"].hovertemplate
    cost = roofline.forward_cost(m, 5, 40, 1, 5)
    recorded = traces["sps step 2: model · measured"]
    assert list(recorded.x) == pytest.approx([cost.intensity] * 2)
    assert list(recorded.y) == pytest.approx([roofline.attainable(H100, "float32", cost.intensity), cost.flops / 0.3])
    roof, ridge = traces["roof"], 67e12 / 3.35e12  # float32 peak over bandwidth: 20 FLOP/byte
    assert roof.x[1] == pytest.approx(ridge) and list(roof.y[1:]) == [peak, peak]
    assert roof.y[0] == pytest.approx(roof.x[0] * 3.35e12)  # below the ridge, the bandwidth's slope
    assert [s.x0 for s in fig.layout.shapes] == [pytest.approx(ridge)]


def test_breakdown_and_sweep_figures_show_the_cost_model():
    cost = speccost.SpecStep(1.0, 0.3, 1.5, 0.2)
    fig = plots.breakdown_figure(cost, 1.5)
    assert {b.name: list(b.x) for b in fig.data} == {"AR forwards": [1.5, 0], "draft": [0, 0.3],
                                                     "verify": [0, 1.5], "overhead": [0, 0.2]}
    assert fig.layout.barmode == "stack"
    assert "speedup 0.75×" in fig.layout.title.text and "break-even τ = 2.00" in fig.layout.title.text
    sweep = plots.sweep_figure([1, 2, 4], [2.0, 1.1, 0.7], "batch", "t")
    line = sweep.data[0]
    assert list(line.x) == [1, 2, 4] and list(line.y) == [2.0, 1.1, 0.7]
    assert list(line.marker.color) == [COLORS["accepted"]] * 2 + [COLORS["rejected"]]  # the losing batch in red
    assert [s.y0 for s in sweep.layout.shapes] == [1]  # the break-even line


def open_roofline(**session) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in session.items():
        at.session_state[k] = v
    at.run()
    at.switch_page("views/roofline.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def metrics(at: AppTest) -> dict:
    return {m.label: m.value for m in at.metric}


def modelled_on(at: AppTest) -> str:
    """The help of the MODEL metric names the hardware it is modelled on."""
    return next(m.proto.help for m in at.metric if m.label == "roofline time (MODEL)")


def test_page_places_a_recorded_step_beside_the_model():
    at = open_roofline()
    text = " ".join(m.value for m in at.markdown)
    assert "[MODEL]" in text and "[MEASURED]" in text and "[FROM RUN]" in text
    # roofline, this CPU's measured passes, breakdown, batch sweep, tree attention's reads; the losing runs,
    # the attention share and the GPU presets' memory
    charts = [c.key for c in at.get("plotly_chart")]
    assert charts == ["roof.fig", "roof.cost", "roof.breakdown", "roof.batch_sweep", "roof.tree_reads",
                      "batch.throughput", "batch.speedup"]
    assert len(at.dataframe) == 4  # the batches' verify passes: after the tree attention's
    trace = Trace.load(sources.TRACE_DIR / "sps-greedy.json")
    assert metrics(at)["verify time (MEASURED)"] == f"{trace.steps[1].verify_ms:.1f} ms"
    assert modelled_on(at).startswith("On Recording machine (2 threads)")  # where the cost curves were timed
    at.selectbox(key="roof.trace").set_value("arena/lookahead").run()
    at.slider(key="roof.step.arena/lookahead").set_value(1).run()  # the prefill
    assert not at.exception and metrics(at)["tokens in the pass"] == str(Trace.load(
        sources.ARENA_DIR / "lookahead.json").steps[0].verified)
    imported = Trace.load(sources.TRACE_DIR / "pld-greedy.json")
    at.session_state[sources.IMPORTED] = {"pld": imported}  # as a method page's Import keeps it
    at.run()
    at.selectbox(key="roof.trace").set_value("imported/pld").run()
    assert not at.exception and metrics(at)["verify time (MEASURED)"] == f"{imported.steps[1].verify_ms:.1f} ms"
    at.selectbox(key="roof.model").set_value("Llama-3.1-8B").run()
    assert any("recorded step appears" in i.value for i in at.info)


def test_page_what_if_and_this_machine(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    at = open_roofline()
    at.slider(key="roof.tau.8").set_value(1.2).run()
    assert any("break even" in m.value and "1.20" in m.value for m in at.markdown)
    assert not at.exception
    # opens on the probes saved with the traces (no torch needed): first the one that timed the cost curves
    assert at.selectbox(key="roof.hw").value == "Recording machine (2 threads)"
    at.selectbox(key="roof.hw").set_value("Recording machine (1 thread)").run()  # the one that timed the steps
    assert modelled_on(at).startswith("On Recording machine (1 thread)")
    at.button(key="roof.measure").click().run()
    assert at.selectbox(key="roof.hw").value == "This machine (1 thread)"
    assert modelled_on(at).startswith("On This machine (1 thread)")
    assert not at.exception and not [b for b in at.button if b.key == "roof.measure"]


def test_page_tree_attention_section():
    at = open_roofline()
    assert any("Tree attention" in m.value for m in at.markdown)
    at.select_slider(key="roof.q_block").set_value(1).run()
    at.selectbox(key="roof.share_tree").set_value("Medusa mc_sim_7b_63").run()
    assert not at.exception
    shares = at.dataframe[1].value  # after the losing runs, before the memory table
    assert list(shares["context"]) == ["512", "4,096", "32,768"]
    assert list(shares.columns[1:]) == ["per-branch", "naive mask", "DeFT"]
    pct = {k: [int(v.rstrip("%")) for v in shares[k]] for k in shares.columns[1:]}
    # a query per block: the 64 rows each reload the context, far more than DeFT's single load
    assert all(n > d for n, d in zip(pct["naive mask"], pct["DeFT"])) and pct["DeFT"] == sorted(pct["DeFT"])


def test_a_pass_reaches_the_ridge_sooner_on_a_chip_with_a_lower_ridge():
    """Where the page says extra tokens stop being free: the fewest tokens whose intensity reaches the ridge."""
    n = roofline.crossing(H100, SMOL, "bfloat16", context=512)
    shape = SMOL.with_dtype("bfloat16")
    assert roofline.forward_cost(shape, n, 512, 1).intensity >= H100.ridge("bfloat16")
    assert roofline.forward_cost(shape, n - 1, 512, 1).intensity < H100.ridge("bfloat16")
    slow = roofline.Hardware("slow memory", {"bfloat16": H100.peak("bfloat16") / 20}, H100.bandwidth, "test")
    assert roofline.crossing(slow, SMOL, "bfloat16", context=512) < n
