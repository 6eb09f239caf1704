"""The roofline at the file's own 4-bit blocks: the bytes a pass reads counted as the embedded file stores them,
and the passes timed on the recording machine placed on its roof at both precisions."""
import pytest
from streamlit.testing.v1 import AppTest

from paradec.costs import machine, measured, roofline
from paradec.costs.roofline import MODELS
from paradec.plots import roofline as plots
from ui import measured_cost, sources

from helpers import APP

SMOL = MODELS["SmolLM2-135M-Instruct"]


def test_the_4bit_format_counts_the_bytes_the_embedded_file_stores():
    from paradec.cpu.gguf_file import GGUFModel
    from paradec.models.gguf import gguf_file

    f = GGUFModel(gguf_file(None))
    matrices = sum(int(t.n_bytes) for t in f.tensors.values() if len(t.shape) == 2)  # the norms are vectors
    q4 = SMOL.with_dtype("bfloat16").with_weights("q4")
    assert roofline.weight_bytes(q4) == matrices  # Q4_1 layers, the Q8_0 tied embedding as the LM head
    assert q4.dtype_bytes == 4  # its activations and KV cache stay float32
    assert SMOL.with_weights("f32") == SMOL  # float32 weights: the dtype's bytes, as before
    f32 = roofline.forward_cost(SMOL.with_dtype("float32"), 1, 30)
    assert roofline.forward_cost(q4, 1, 30).flops == f32.flops  # the same arithmetic, fewer bytes
    assert roofline.forward_cost(q4, 1, 30).intensity == pytest.approx(f32.intensity * f32.bytes / (
        matrices + roofline.kv_bytes(q4, 1, 30)))


def test_the_timed_passes_sit_where_their_bytes_and_measured_time_put_them():
    cost = sources.forward_cost()
    hw, curves = machine.hardware(cost["machine"], "Recording machine"), measured.curves(cost)
    assert set(curves) == {"q4", "f32"} and cost["machine"]["threads"] == cost["threads"]
    timed = {"context": cost["context_tokens"], "curves": curves}
    fig = plots.roofline_figure(hw, SMOL, "float32", 512, 1, timed=timed)
    traces = {tr.name: tr for tr in fig.data if tr.name}
    ar = {}
    for weights, ms in curves.items():
        tr = traces[f"{measured.PRECISIONS[weights]}: AR and verify passes (measured)"]
        shape = SMOL.with_dtype("float32").with_weights(weights)
        costs = [roofline.forward_cost(shape, n, cost["context_tokens"]) for n in sorted(ms)]
        assert list(tr.x) == pytest.approx([c.intensity for c in costs])
        assert list(tr.y) == pytest.approx([c.flops / (ms[n] / 1e3) for c, n in zip(costs, sorted(ms))])
        assert tr.marker.size[0] > max(tr.marker.size[1:])  # AR, the one-token pass, stands out
        ar[weights] = (tr.x[0], tr.y[0])
    assert ar["q4"][0] > 5 * ar["f32"][0]  # a fifth of the bytes: five times the intensity
    assert all(y < roofline.attainable(hw, "float32", x) for x, y in ar.values())  # measured: under the roof


def test_the_roofline_page_opens_on_the_timed_passes_of_both_precisions():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("views/roofline.py").run()
    assert not at.exception, [e.value for e in at.exception]
    timer = measured_cost.timed_machine()
    assert at.selectbox(key="roof.hw").value == timer.name == "Recording machine (2 threads)"
    fig = next(c for c in at.get("plotly_chart") if c.key == "roof.fig")
    assert '4-bit: AR and verify passes (measured)' in fig.proto.spec
    assert 'float32: AR and verify passes (measured)' in fig.proto.spec
    text = " ".join(m.value for m in at.markdown)
    cost = sources.forward_cost()
    one = dict(zip(cost["tokens"], cost["curves"]["paradec"]["median_ms"]))[1]
    assert f"reads 92 MiB of weights in {one:.1f} ms" in text and "reads 513 MiB" in text
    step = next(c.value for c in at.caption if "MB moved" in c.value)  # the recorded step, a 4-bit run's
    assert sources.load(sources.TRACE_DIR / "sps-greedy.json").weights == "q4"
    assert 96 < float(step.split(" MB moved")[0].split()[-1]) < 110  # its 96 MB of weights and its KV cache
    at.selectbox(key="roof.hw").set_value("Recording machine (1 thread)").run()  # not the curves' roof: no points
    fig = next(c for c in at.get("plotly_chart") if c.key == "roof.fig")
    assert "(measured)" not in fig.proto.spec and not at.exception


def test_the_static_sites_roofline_places_the_same_timed_passes():
    from paradec.data import ASSETS
    from paradec.site.pages import roofline as roofline_page
    from paradec.words import Words

    page = roofline_page(ASSETS, Words("en"))
    names = [t.get("name") for t in page.charts["cpu"]["data"]]
    assert "4-bit: AR and verify passes (measured)" in names and "float32: AR and verify passes (measured)" in names
    assert "Recording machine (2 threads)" in page.charts["cpu"]["layout"]["title"]["text"].replace("<br>", " ")
