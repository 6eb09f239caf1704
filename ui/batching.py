"""The Roofline page's batching section: a recorded bench --batch run (AR and the methods at batch sizes
1-16, each a ratio to AR at the same size), where each method's speedup falls below AR, and where each batch's
verify pass sits against the ridge point."""
from __future__ import annotations

import streamlit as st

from paradec.bench_batch import by_batch, crossing
from paradec.costs import roofline
from paradec.plots import batch as plots
from paradec.plots.style import FROM_RUN, MEASURED, MODEL

from . import roofline as roofline_page
from .bench import main_report
from .i18n import _
from .style import chart, header

RECORDED = "cpu-2core-batch"  # python -m paradec bench ... --batch 1,2,4,8,16 (docs/results.md)


def section() -> None:
    st.subheader(_("Batching: where speculation stops paying"))
    st.markdown(_("""Engines decode many sequences at once: a pass's rows are nearly free while it waits on
memory, so a batch fills them with **other sequences' tokens**, and AR's throughput grows with the batch.
Speculation fills the same spare rows with drafted tokens; as the batch grows the pass nears the ridge point,
each extra row starts to cost time, and drafted rows that are rejected are wasted. So the speedup over AR
shrinks with the batch size, and beyond some size it is below 1.0. Here it is measured: each sequence's tokens
are its batch-1 tokens, and each row is a ratio to AR **at the same batch size**."""))
    report = main_report(RECORDED)
    if report is None:
        st.info(_("No recorded batch run: `python -m paradec bench --batch 1,2,4,8,16 ...` writes one."))
        return
    paying = _paying(report)
    left, right = st.columns(2)
    with left:
        header(_("Throughput by batch size"), MEASURED, help=_("Every sequence's new tokens per second of the "
               "whole batch: AR (dashed) and the methods that beat it at batch 1."))
        chart(plots.throughput_figure(paying), "batch.throughput")
    with right:
        header(_("Speedup over AR at the same batch size"), MEASURED, help=_("Above 1.0 the method beats AR "
               "decoding the same batch; a dotted line marks where it falls below."))
        chart(plots.speedup_figure(paying), "batch.speedup")
    _findings(report)
    _passes(paying)


def _paying(report: dict) -> dict:
    """The report with AR and the methods faster than AR at batch 1 (the others are below it from the start)."""
    keep = [m for m, b in by_batch(report).items() if m == "ar" or not _below_from_the_start(b)]
    return {**report, "methods": {m: report["methods"][m] for m in keep}}


def _below_from_the_start(by: dict) -> bool:
    """Whether a method is slower than AR at the smallest batch size measured."""
    first = by[str(min(int(b) for b in by))]["speedup"]
    return first is not None and first < 1.0


def _findings(report: dict) -> None:
    st.markdown("\n".join(f"- {line}" for line in findings(report)))
    st.caption(_("From `assets/bench/{name}.json` ({when}; {machine}).").format(
        name=RECORDED, when=report.get("created", "?"), machine=report.get("machine", {}).get("cpu", "?")))


def findings(report: dict) -> list[str]:
    """What the recorded run shows, a line each: AR's gains, where each method falls below AR, the exactness."""
    by = by_batch(report)
    sizes = sorted(int(b) for b in by.get("ar", {}))
    lines = []
    if len(sizes) > 1:
        lines += _ar_gains(by["ar"], sizes)
    for m, b in by.items():
        if m == "ar":
            continue
        at = crossing(b)
        if at is not None:
            lines.append(_("{method}: below AR from batch {at:.1f}.").format(method=m, at=at))
        elif _below_from_the_start(b):
            lines.append(_("{method}: below AR at every batch size measured, batch 1 included.").format(method=m))
        else:
            lines.append(_("{method}: above AR at every batch size measured (up to {most}).").format(
                method=m, most=sizes[-1]))
    same = sum(c["identical_runs"] for b in by.values() for c in b.values())
    runs = sum(c["runs"] for b in by.values() for c in b.values())
    lines.append(_("{same} of {runs} sequences gave AR's batch-1 tokens.").format(same=same, runs=runs))
    return lines


def _ar_gains(ar: dict, sizes: list[int]) -> list[str]:
    """AR's throughput at each batch size over batch 1's: whole requests, then after the prompts' pass."""
    def gains(field: str) -> str:
        return ", ".join(_("{gain:.1f}× at B = {b}").format(gain=ar[str(b)][field] / ar["1"][field], b=b)
                         for b in sizes[1:])

    lines = [_("AR's tokens per second over batch 1's: {gains}.").format(
        gains=gains("tokens_per_s"))]
    if all("decode_tokens_per_s" in ar[str(b)] for b in sizes):
        lines.append(_("After the prompts' pass: {gains}. A prompt's rows are already many, so its pass is "
                       "compute-bound and costs the same per token at any batch size: it is the part of a batch's "
                       "time that batching does not shrink.").format(gains=gains("decode_tokens_per_s")))
    return lines


def _passes(report: dict) -> None:
    model = roofline.MODELS["SmolLM2-135M-Instruct"].with_dtype("float32")
    recorded = roofline_page.recording()
    if not recorded:  # traces shipped without their machine's probe: nothing to place the passes against
        return
    ridge = next(iter(recorded.values())).ridge("float32")
    header(_("Each batch's verify pass on the roofline"), FROM_RUN, MODEL, help=_(
        "The mean rows of a shared verify pass (from the run) and its arithmetic intensity (the roofline's "
        "model, float32, 100 tokens cached per sequence), against this CPU's ridge point."))
    rows = [{_("method"): p["method"], "B": p["B"], _("rows in the pass"): p["rows"],
             _("FLOP/byte"): round(p["intensity"], 2),
             _("side of the ridge"): _("memory-bound") if p["intensity"] < ridge else _("compute-bound")}
            for p in plots.passes(report, model)]
    st.dataframe(rows, hide_index=True, height=min(400, 36 + 35 * len(rows)))
    st.caption(_("This CPU's ridge point in float32: {ridge:.2f} FLOP/byte (probed). An H100's in bfloat16 is "
                 "about {gpu:.0f}: there a batch of 16 verify passes is still far left of it.").format(
        ridge=ridge, gpu=roofline.HARDWARE["H100 SXM"].ridge("bfloat16")))
