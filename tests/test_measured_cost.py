"""The measured verify-cost curves (paradec.costs.measured): each precision's paradec curve, a pass's cost in
one-token passes, the widest pass a τ pays for; and the Roofline page reading them and feeding its what-if."""
import pytest

from paradec.costs import measured

COST = {"model": "tiny", "device": "cpu", "threads": 2, "tokens": [1, 2, 8, 64], "curves": {
    "paradec": {"median_ms": [10.0, 11.0, 20.0, 90.0], "all_ms": [[10.0]] * 4, "weights": "q4"},
    "paradec float32": {"median_ms": [40.0, 41.0, 48.0, 160.0], "all_ms": [[40.0]] * 4, "weights": "f32"},
    "Hugging Face": {"median_ms": [60.0, 90.0, 130.0, 400.0], "all_ms": [[60.0]] * 4, "weights": "f32"}}}


def test_the_curves_are_paradecs_by_precision_and_a_pass_is_read_in_one_token_passes():
    got = measured.curves(COST)
    assert set(got) == {"q4", "f32"} and got["q4"][8] == 20.0 and got["f32"][64] == 160.0  # not Hugging Face's
    assert measured.ratio(got["q4"], 8) == 2.0 and measured.ratio(got["f32"], 8) == pytest.approx(1.2)
    assert measured.ratio(got["q4"], 5) == pytest.approx(1.55)  # between the widths measured
    assert measured.ratio(got["q4"], 500) == 9.0  # past the widest: the widest's


def test_the_widest_paying_pass_is_the_widest_costing_less_than_tau():
    ms = measured.curves(COST)
    assert measured.widest_paying(ms["q4"], 2.5) == 8 and measured.widest_paying(ms["f32"], 2.5) == 8
    assert measured.widest_paying(ms["f32"], 4.5) == 64 and measured.widest_paying(ms["q4"], 1.05) is None


def test_an_old_file_without_weights_reads_as_float32():
    old = {"tokens": [1, 8], "curves": {"paradec": {"median_ms": [10.0, 12.0], "all_ms": [[10.0], [12.0]]}}}
    assert measured.curves(old) == {"f32": {1: 10.0, 8: 12.0}}


def test_the_legend_names_each_curves_precision():
    from paradec.plots.kpis import cost_figure

    names = [d.name for d in cost_figure(COST).data if d.showlegend is not False]
    assert names == ["paradec 4-bit", "paradec float32", "Hugging Face float32"]


def test_the_roofline_page_reads_both_precisions_and_its_what_if_takes_the_measured_verify_cost():
    from test_app import open_page

    at = open_page("views/roofline.py")
    text = " ".join(m.value for m in at.markdown)
    assert "**4-bit**" in text and "**float32**" in text and "widest pass that still pays" in text
    breakdown = lambda: next(m.value for m in at.markdown if "One step costs" in m.value)  # noqa: E731
    modelled = breakdown()
    at.radio(key="roof.verify_from").set_value("q4").run()
    assert not at.exception and breakdown() != modelled
