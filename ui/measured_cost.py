"""The Roofline page's measured part: one forward pass timed on this CPU by the tokens it carries, paradec's at
both precisions beside Hugging Face's (assets/traces/forward_cost.json), the text that reads the curves, and the
what-if's verify cost taken from the curve of the chosen precision."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from paradec.costs import measured, roofline
from paradec.costs.roofline import Hardware, ModelShape
from paradec.plots.kpis import cost_figure
from paradec.plots.style import MEASURED

from . import figures, i18n, sources
from .i18n import N_, _
from .style import chart, header

WIDTHS = (8, 16, 64)  # the passes the text reads: a CPU-sized tree, a larger one, the widest measured
MODEL = "model"  # the what-if's verify cost from the roofline model (the other choices: a measured precision)
SOURCES = {MODEL: N_("roofline model"), "q4": N_("measured, 4-bit"), "f32": N_("measured, float32")}


def section() -> None:
    cost = sources.forward_cost()
    if not cost:
        return
    header(_("Measured on this CPU: a verify pass by its tokens"), MEASURED,
           help=_("The measured time of one forward pass against the tokens it carries: paradec's forward on the "
                  "file's 4-bit blocks and on its float32 copy, beside Hugging Face's. A flat curve means verifying "
                  "many drafted tokens costs about as much as one."))
    chart(cost_figure(cost), "roof.cost")
    st.caption(_("`make traces`, {threads} torch threads, after {context} cached tokens, each pass timed {times} "
                 "times, interleaved (the median).").format(
        threads=cost["threads"], context=cost["context_tokens"],
        times=len(next(iter(cost["curves"].values()))["all_ms"][0])))
    st.markdown(reading(measured.curves(cost)))
    _gpus()


def reading(curves: dict[str, dict[int, float]]) -> str:
    """What the curves say, in numbers: each precision's pass widths in one-token passes, and the widest pass that
    still pays at the τ EAGLE-3 reached in the benchmark."""
    if not curves:
        return ""
    report = figures.main_report()
    tau = report and report["methods"].get("eagle3", {}).get("tau")
    lines = [_("**{precision}**: one token {one:.1f} ms; a pass over {widths}.").format(
        precision=_(measured.PRECISIONS[w]), one=ms[1],
        widths=", ".join(_("{n} tokens costs {r:.2f}×").format(n=n, r=measured.ratio(ms, n)) for n in WIDTHS))
        for w, ms in curves.items()]
    text = "\n".join(f"- {line}" for line in lines)
    if {"q4", "f32"} <= set(curves):
        q4, f32 = (measured.ratio(curves[w], WIDTHS[0]) for w in ("q4", "f32"))
        text += "\n\n" + (_("The 4-bit pass reads about a fifth of float32's bytes, so its one-token pass is the "
                              "faster, while a wider pass adds as much integer arithmetic per token: relative to "
                              "its own one-token pass its curve rises sooner ({q4:.2f}× for {n} tokens against "
                              "{f32:.2f}×).") if q4 > f32 else
                            _("The 4-bit pass reads about a fifth of float32's bytes, and relative to its own "
                              "one-token pass its curve stays as flat ({q4:.2f}× for {n} tokens against "
                              "{f32:.2f}×).")).format(q4=q4, f32=f32, n=WIDTHS[0])
    text += " " + _("A step must commit more tokens than its verify pass costs one-token passes, before the "
                    "draft's own cost.")
    if tau is None:
        return text
    widest = [_("{n} tokens at {precision}").format(n=n, precision=_(measured.PRECISIONS[w])) if n else
              _("no pass wider than one token at {precision}").format(precision=_(measured.PRECISIONS[w]))
              for w, n in ((w, measured.widest_paying(ms, tau)) for w, ms in curves.items())]
    return text + " " + _("With EAGLE-3's benchmark τ of {tau:.2f}, the widest pass that still pays is "
                          "{widths}.").format(tau=tau, widths=", ".join(widest))


def verify_steps(tokens: int, key: str) -> float | None:
    """The what-if's verify pass over `tokens` in AR steps: from the measured curve of the precision chosen here,
    or None for the roofline model's."""
    cost = sources.forward_cost()
    curves = measured.curves(cost) if cost else {}
    options = [MODEL, *curves]
    pick = st.radio(_("Verify cost from"), options, format_func=i18n.labelled(SOURCES), horizontal=True, key=key,
                    help=_("The roofline model on the chip chosen above, or the verify pass measured on this CPU at "
                           "either precision (its time over a one-token pass, from the curve above)."))
    return None if pick == MODEL else measured.ratio(curves[pick], tokens)


def timed_machine() -> Hardware | None:
    """The machine that timed the curves, probed at their threads (the roof the Roofline chart places them on)."""
    cost = sources.forward_cost()
    found = cost and measured.timed(cost)
    return found[0] if found else None


def timed_passes(hw: Hardware, model: ModelShape, dtype: str, batch: int) -> dict | None:
    """The curves for the Roofline chart ({'context', 'curves'}) when the chart is of the chip, model, dtype and
    batch they were timed with; else None."""
    cost = sources.forward_cost()
    found = cost and measured.timed(cost)
    if not found or (hw.name, model.name, dtype, batch) != (found[0].name, cost["model"], cost["dtype"], 1):
        return None
    return found[1]


def timed_reading(hw: Hardware, model: ModelShape, timed: dict) -> str:
    """What the timed passes on the roofline say: the bytes each precision's one-token pass moves and how fast
    against the roof, and the pass that reaches the ridge."""
    parts = []
    for weights, ms in timed["curves"].items():
        shape = model.with_dtype("float32").with_weights(weights)
        mb, n = roofline.weight_bytes(shape) / 2**20, roofline.crossing(hw, shape, "float32", timed["context"])
        parts.append(_("**{precision}**: the one-token pass reads {mb:.0f} MiB of weights in {ms:.1f} ms, {gbs:.0f} "
                       "GB/s ({share:.0%} of the probe's bandwidth); the model puts a pass of {n} tokens on the "
                       "ridge.").format(precision=_(measured.PRECISIONS[weights]), mb=mb, ms=ms[1],
                                        gbs=mb * 2**20 / ms[1] / 1e6, share=mb * 2**20 / (ms[1] / 1e3) / hw.bandwidth,
                                        n=n if n is not None else "> 4096"))
    text = "\n".join(f"- {p}" for p in parts) + "\n\n" + _(
        "The dashed lines are passes timed on {hw}, each placed by the bytes its weights move.").format(hw=hw.name)
    if {"q4", "f32"} <= set(timed["curves"]):
        one = {w: roofline.weight_bytes(model.with_dtype("float32").with_weights(w)) for w in ("q4", "f32")}
        text += " " + _("The 4-bit passes read {times:.1f}× fewer bytes, so they sit that much further right, nearer "
                        "the ridge: that is why their verify-cost curve below rises sooner. Their arithmetic is 8-bit "
                        "integer dot products, whose peak the probe does not measure: the flat roof drawn is "
                        "float32's.").format(times=one["f32"] / one["q4"])
    return text


def _gpus() -> None:
    for path in sorted((Path(__file__).resolve().parents[1] / "assets" / "bench").glob("gpu-*.json")):
        gpu = sources.json_file(path)
        header(_("Measured on a GPU: {device}").format(device=gpu["device"]), MEASURED,
               help=_("The same measurement on a GPU: the time of one forward pass against the tokens it carries. "
                      "A GPU's curve stays flat far longer than a CPU's."))
        chart(cost_figure(gpu), f"roof.{path.stem}")
        st.caption(_("`scripts/gpu_check.py` ({model}): Hugging Face's forward as the verifier runs it, after "
                     "{context} cached tokens, bfloat16 and float32.").format(model=gpu["model"],
                                                                              context=gpu["context_tokens"]))
