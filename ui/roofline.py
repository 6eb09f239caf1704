"""The roofline page's parts: the chip, model and dtype; a recorded step placed on the
roofline with its measured and modelled time; the what-if of a speculative step; and the
recorded runs that lose on this CPU, explained by the same cost model; and what the attention
of a tree verify pass reads, per-branch, with a dense mask and with DeFT."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import streamlit as st

from paradec.core.tree import MEDUSA_TREES, paths_to_tree
from paradec.costs import machine, roofline, speccost, treeattn
from paradec.costs.roofline import HARDWARE, MODELS, Hardware, ModelShape
from paradec.plots import roofline as plots
from paradec.plots import treeattn as tree_plots
from paradec.plots.style import FROM_RUN, MEASURED, MODEL
from paradec.traces.trace import Trace

from . import live, measured_cost, sources
from .i18n import N_, _
from .style import chart, header

MACHINE = "roof.machine"  # session key: this machine's Hardware once probed
RECORDING = "machine.json"  # beside the traces: the probe of the machine that timed them
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
TREES = [1, 2, 4, 8, 16, 32, 64]
TREE_TRACES = {"Medusa": "medusa-greedy", "EAGLE-1": "eagle-greedy", "EAGLE-2": "eagle2-greedy",
               "EAGLE-3": "eagle3-greedy"}
LONG_CONTEXTS = [512, 1024, 2048, 4096, 8192, 16384, 32768, 131072]
SHARE_CONTEXTS = [512, 4096, 32768]
Q_BLOCKS = [1, 16, 64, 128]
SHARE_COLUMNS = {"per-branch": N_("per-branch"), "naive mask": N_("naive mask")}  # paradec's keys, shown


@dataclass(frozen=True)
class Choice:
    hw: Hardware
    model: ModelShape
    dtype: str
    batch: int
    context: int


@st.cache_data
def recording() -> dict[str, Hardware]:
    """The probes of the machine that timed the cost curves and the traces, by name (their threads differ)."""
    timer = measured_cost.timed_machine()  # the measured curves' (first: the page opens on their passes)
    found = {timer.name: timer} if timer else {}
    try:
        hw = machine.recorded(sources.TRACE_DIR / RECORDING)
    except (OSError, ValueError, KeyError, TypeError):
        return found  # traces recorded without their machine: the presets still place them
    return found | {hw.name: hw}


def _hardware() -> dict[str, Hardware]:
    probed = st.session_state.get(MACHINE)
    return recording() | ({probed.name: probed} if probed else {}) | HARDWARE


def _measure() -> None:
    with st.spinner(_("Measuring this machine once (under 2 s)…")):
        st.session_state[MACHINE] = live.machine()
    st.session_state["roof.hw"] = st.session_state[MACHINE].name


def choose() -> Choice:
    """Chip (the machine that timed the recorded traces, this one once measured, and the
    data-sheet presets), model, dtype, batch and context."""
    c = [*st.columns(2), *st.columns([1, 1, 1.4], vertical_alignment="bottom")]  # two rows: the names are long
    chips = _hardware()
    hw = chips[c[0].selectbox(_("Hardware"), list(chips), key="roof.hw",
                              help=_("Opens on the machine that timed the recorded traces (its probe, measured on "
                                     "one thread when they were recorded); Measure this machine adds yours; the "
                                     "others are data-sheet presets."))]
    model = MODELS[c[1].selectbox(_("Model"), list(MODELS), key="roof.model")]
    dtypes = list(hw.flops)
    dtype = c[2].selectbox("dtype", dtypes, index=dtypes.index("float32"), key=f"roof.dtype.{hw.name}")
    batch = c[3].selectbox(_("Batch"), BATCHES, key="roof.batch")
    context = c[4].select_slider(_("Cached tokens"), [64, 128, 256, 512, 1024, 2048, 4096, 8192], 512,
                                 key="roof.ctx")
    st.caption(_("{hw}: {peak:.3g} TFLOP/s {dtype}, {bandwidth:.4g} GB/s (source: {source}) · {model}: "
                 "{params:.3g} B parameters, {kv_heads} KV heads of {heads}").format(
        hw=hw.name, peak=hw.peak(dtype) / 1e12, dtype=dtype, bandwidth=hw.bandwidth / 1e9, source=hw.source,
        model=model.name, params=roofline.params(model) / 1e9, kv_heads=model.kv_heads, heads=model.heads))
    if MACHINE not in st.session_state:
        st.button(_("Measure this machine"), on_click=_measure, key="roof.measure",
                  help=_("Probe this computer's float32 matrix-product speed and memory bandwidth on one thread "
                         "(under 2 s, cached), and add it to the Hardware list."))
    return Choice(hw, model, dtype, batch, context)


def traces() -> dict[str, Callable[[], Trace]]:
    """Every recorded trace (the method pages' and the arena set's), then those imported on a
    method page in this session."""
    files = sorted(sources.TRACE_DIR.glob("*-*.json")) + sorted(sources.ARENA_DIR.glob("*.json"))
    found = {("arena/" if f.parent == sources.ARENA_DIR else "") + f.stem: partial(sources.load, f) for f in files}
    imported = st.session_state.get(sources.IMPORTED, {})
    return found | {f"imported/{m}": partial(imported.get, m) for m in imported}


def where_it_stands(ch: Choice) -> str:
    """The introduction's claim for the chip, model and dtype on screen: where a pass reaches the ridge."""
    n, ridge = roofline.crossing(ch.hw, ch.model, ch.dtype, ch.context, ch.batch), ch.hw.ridge(ch.dtype)
    ar = roofline.forward_cost(ch.model.with_dtype(ch.dtype), 1, ch.context, ch.batch).intensity
    values = {"hw": ch.hw.name, "dtype": ch.dtype, "ridge": ridge, "model": ch.model.name, "ar": ar, "n": n}
    if n is None:
        return _("On **{hw}** in {dtype} the ridge is at **{ridge:.3g} FLOP/byte**, and {model}'s AR pass at "
                 "{ar:.3g}: no pass of a few thousand tokens reaches it, so every verify pass rides on the memory "
                 "traffic.").format(**values)
    if n <= 2:
        return _("On **{hw}** in {dtype} the ridge is at **{ridge:.3g} FLOP/byte** and {model}'s AR pass already at "
                 "{ar:.3g}: a pass of **{n} tokens** reaches it, so here extra tokens are **not** free: a verify pass "
                 "costs about its arithmetic, and whether speculation pays is what the measured curves below "
                 "decide.").format(**values)
    return _("On **{hw}** in {dtype} the ridge is at **{ridge:.3g} FLOP/byte** and {model}'s AR pass at {ar:.3g}: a "
             "pass reaches it at about **{n} tokens**; a verify pass of fewer rides along almost free.").format(
        **values)


def pick_step() -> tuple[Trace, int]:
    found = traces()
    names = list(found)
    c = st.columns([1, 2])
    first = names.index("sps-greedy") if "sps-greedy" in found else 0
    name = c[0].selectbox(_("Trace (recorded, or imported on a method page)"), names, index=first,
                          key="roof.trace")
    trace = found[name]()
    n = len(trace.steps)
    i = c[1].slider(_("Step (1 is the prefill)"), 1, n, min(2, n), key=f"roof.step.{name}") - 1
    return trace, i


def step_point(trace: Trace, i: int) -> dict:
    n, c, rows = roofline.verify_pass(trace.steps[i])
    return {"label": _("{method} step {step}").format(method=trace.method, step=i + 1), "n": n, "c": c, "rows": rows,
            "measured_s": trace.steps[i].verify_ms / 1e3, "weights": trace.weights}


def roofline_panel(ch: Choice, trace: Trace, i: int) -> None:
    """The roofline, with the recorded step when the chosen model, dtype and batch are the trace's."""
    point = step_point(trace, i)
    same = ch.model.name == trace.model and ch.dtype == trace.dtype and ch.batch == 1
    timed = measured_cost.timed_passes(ch.hw, ch.model, ch.dtype, ch.batch)  # both precisions' passes, measured
    header(_("Roofline"), MODEL, *([MEASURED] if same or timed else []),
           help=_("Attainable FLOP/s (y) against arithmetic intensity, FLOPs per byte moved (x). Left of the ridge a "
                  "pass waits on memory, so extra tokens in it are nearly free; AR decoding sits far left, verify "
                  "passes further right."))
    chart(plots.roofline_figure(ch.hw, ch.model, ch.dtype, ch.context, ch.batch, point if same else None,
                                timed=timed), "roof.fig")
    if timed:
        st.markdown(measured_cost.timed_reading(ch.hw, ch.model, timed))
    if not same:
        st.info(_("The recorded step appears when the model is {model}, the dtype {dtype} and the batch 1, as in "
                  "the trace.").format(model=trace.model, dtype=trace.dtype))
        return
    shape = ch.model.with_dtype(ch.dtype).with_weights(trace.weights)  # a 4-bit run reads its own bytes
    cost = roofline.forward_cost(shape, point["n"], point["c"], 1, point["rows"])
    model_ms = roofline.seconds(ch.hw, ch.dtype, cost) * 1e3
    m = [*st.columns(2), *st.columns(2)]  # two rows: the labels are long
    m[0].metric(_("tokens in the pass"), point["n"],
                help=_("after {n} cached tokens (FROM RUN)").format(n=point["c"]))
    m[1].metric(_("verify time (MEASURED)"), f"{point['measured_s'] * 1e3:.1f} ms",
                help=_("timed when the trace was recorded ({device}, {dtype}, one thread); includes the acceptance "
                       "test").format(device=trace.device, dtype=trace.dtype))
    m[2].metric(_("roofline time (MODEL)"), f"{model_ms:.2f} ms",
                help=_("On {hw}: max(FLOPs / peak, bytes / bandwidth), a lower bound").format(hw=ch.hw.name))
    m[3].metric(_("measured / model"), f"{point['measured_s'] * 1e3 / model_ms:.1f}×")
    moved = (_("{gflop:.3g} GFLOP and {mb:.4g} MB moved: {intensity:.3g} FLOP/byte, memory-bound on {hw}.")
             if roofline.memory_bound(ch.hw, ch.dtype, cost) else
             _("{gflop:.3g} GFLOP and {mb:.4g} MB moved: {intensity:.3g} FLOP/byte, compute-bound on {hw}."))
    text = [moved.format(gflop=cost.flops / 1e9, mb=cost.bytes / 1e6, intensity=cost.intensity, hw=ch.hw.name),
            _("The roofline counts only weights, KV cache and arithmetic at the probe's peak rates; a real pass "
              "also pays for the calls between its products and reaches neither peak, so the measured time sits "
              "above the roof.")]
    if not ch.hw.name.startswith(("This machine", "Recording machine")):
        text.append(_("The time was measured on {device}, the model is for {hw}: choose the recording machine to "
                      "compare like with like.").format(device=trace.device, hw=ch.hw.name))
    st.caption(" ".join(text))


def what_if(ch: Choice) -> None:
    header(_("What if: does a speculative step pay off here?"), MODEL,
           help=_("Predicted speedup of a speculative step on the chosen chip and model: τ tokens for one draft "
                  "and one verify pass, against τ AR steps. Move τ, the tree size and the draft cost to find where "
                  "it breaks even."))
    c = st.columns(4)
    tree = c[0].select_slider(_("Tree size (drafted tokens)"), TREES, 8, key="roof.tree")
    tau = c[1].slider(_("τ (tokens per step)"), 1.0, float(tree + 1), min(2.5, tree + 1.0), 0.05,
                      key=f"roof.tau.{tree}")
    draft = c[2].slider(_("Draft cost (AR steps)"), 0.0, 2.0, 0.2, 0.05, key="roof.draft")
    overhead = c[3].slider(_("Overhead (AR steps)"), 0.0, 1.0, 0.05, 0.05, key="roof.overhead")
    cost = speccost.predict(ch.hw, ch.model, ch.dtype, tree, draft, overhead, ch.context, ch.batch)
    verify = measured_cost.verify_steps(tree + 1, key="roof.verify_from")  # None: the model's
    unit = speccost.SpecStep(1.0, cost.draft / cost.ar, cost.verify / cost.ar if verify is None else verify,
                             cost.overhead / cost.ar)
    left, right = st.columns(2)
    with left:
        chart(plots.breakdown_figure(unit, tau), "roof.breakdown")
        st.markdown(_verdict(unit, tau, tree))
    with right:
        speed = [speccost.predict(ch.hw, ch.model, ch.dtype, tree, draft, overhead, ch.context, b).speedup(tau)
                 for b in BATCHES]
        lose = speccost.first_losing(BATCHES, dict(zip(BATCHES, speed)).__getitem__)
        title = (_("speedup vs batch: below 1× from batch {batch}").format(batch=lose) if lose
                 else _("speedup vs batch: above 1× at every batch up to 512"))
        chart(plots.sweep_figure(BATCHES, speed, _("batch"), title), "roof.batch_sweep")


def _verdict(unit: speccost.SpecStep, tau: float, tree: int) -> str:
    alpha = speccost.alpha_for_tau(unit.break_even_tau, tree)
    need = (_("a {tree}-token chain needs each token accepted with probability ≥ **{alpha:.2f}** just to break "
              "even").format(tree=tree, alpha=alpha) if alpha is not None else
            _("no {tree}-token chain can break even (τ ≤ {most})").format(tree=tree, most=tree + 1))
    return _("One step costs **{cost:.2f} AR steps** (verify {verify:.2f}, draft {draft:.2f}, overhead "
             "{overhead:.2f}), so τ must exceed {cost:.2f}: {need}. At τ = {tau:.2f} the prediction is "
             "**{speedup:.2f}×**. High acceptance still loses when the pass over the tree, or the drafting, costs "
             "more AR steps than the tokens it wins.").format(
        cost=unit.break_even_tau, verify=unit.verify, draft=unit.draft, overhead=unit.overhead, need=need, tau=tau,
        speedup=unit.speedup(tau))


def losing_runs() -> None:
    """The recorded arena runs against AR: measured speedup beside the cost model fed with
    each run's own measured step costs."""
    runs = sources.arena()
    ar = runs.get("ar")
    if ar is None:
        return
    header(_("Recorded runs on this CPU, explained by the cost model"), MEASURED, FROM_RUN, MODEL,
           help=_("The arena's recorded runs that lose to AR on this CPU, with their measured step costs fed to the "
                  "same cost model: it predicts the loss from τ and the step cost alone."))
    rows = []  # (method, speedup measured, verify in AR steps, the row shown)
    for name, t in runs.items():
        if name == "ar":
            continue
        cost, tau = speccost.measured(t, ar)
        speedup, verify = round(t.speedup_over(ar), 2), round(cost.verify / cost.ar, 2)
        rows.append((name, speedup, verify, {
            _("method"): name, _("τ (FROM RUN)"): round(t.tau, 2), _("τ after the prefill"): round(tau, 2),
            _("speedup (MEASURED)"): speedup, _("draft (AR steps)"): round(cost.draft / cost.ar, 2),
            _("verify (AR steps)"): verify, _("break-even τ"): round(cost.break_even_tau, 2),
            _("speedup (MODEL)"): round(cost.speedup(tau), 2)}))
    st.dataframe([r[3] for r in rows], hide_index=True)
    lost = [r for r in rows if r[1] < 1]
    verify = sorted(r[2] for r in lost)
    text = [_("The arena set (assets/traces/arena, the runs the Arena page shows): one prompt, every method in one "
              "process ({device}, {dtype}); an AR step took {ms:.0f} ms.").format(
                device=ar.device, dtype=ar.dtype, ms=speccost.measured(ar, ar)[0].ar),
            _("τ is the Arena's, over every step; the model reads τ after the prefill, as its step costs leave the "
              "prefill out."),
            _("Measured below 1×: {methods}. Their τ stays under the break-even τ their own measured step costs "
              "set: their verify passes cost {low:.2f}-{high:.2f} AR steps, before any drafting.").format(
                methods=", ".join(r[0] for r in lost), low=verify[0], high=verify[-1]) if lost else
            _("Measured below 1×: none.")]
    st.caption(" ".join(text))


def verify_trees() -> dict[str, list[int]]:
    """The recorded Medusa and EAGLE verify trees (each trace's largest), then Medusa's own
    63-node GPU tree, which no CPU trace uses."""
    found = {name: treeattn.verify_tree(sources.load(sources.TRACE_DIR / f"{stem}.json"))
             for name, stem in TREE_TRACES.items() if (sources.TRACE_DIR / f"{stem}.json").exists()}
    return found | {"Medusa mc_sim_7b_63": paths_to_tree(MEDUSA_TREES["mc_sim_7b_63"])[1]}


def tree_attention(ch: Choice) -> None:
    header(_("Tree attention: what a verify pass reads"), MODEL, FROM_RUN,
           help=_("The KV-cache bytes one tree verify pass reads: per branch (each path reads the context again), "
                  "with a dense tree mask, and with DeFT's prefix-shared attention, which reads the shared context "
                  "once."))
    c = st.columns(2)
    context = c[0].select_slider(_("Context (cached tokens)"), LONG_CONTEXTS, 4096, key="roof.tree_ctx")
    q_block = c[1].select_slider(_("Query rows per block (naive mask kernel)"), Q_BLOCKS, treeattn.Q_BLOCK,
                                 key="roof.q_block", help=_("1: one query per block, as decode kernels take them; "
                                                            "16: the smallest tensor-core tile; 64 and 128: "
                                                            "FlashAttention-2's query tiles"))
    trees = verify_trees()
    chart(tree_plots.reads_figure(ch.model, ch.dtype, trees, context, q_block, ch.batch), "roof.tree_reads")
    st.markdown(_("""Every query of a tree verify pass needs the whole context, so how often the context's keys
and values are loaded decides the attention's cost. Decoding each root-to-leaf branch as its own sequence
reloads the context once per leaf. A dense kernel with the tree mask streams all keys (masked ones too)
once per block of query rows: one pass while the tree fits in a block, one more per extra block.
**DeFT** (Yao et al., ICLR 2025) groups the work by the keys instead of by the queries: the context and
each tree segment are loaded once, together with every query that needs them, and split evenly so the
GPU stays busy without reloading anything. The rest of the roofline already assumes this single load."""))
    share_table(ch, trees[st.selectbox(_("Tree"), list(trees), key="roof.share_tree")], q_block)


def share_table(ch: Choice, parents: list[int], q_block: int) -> None:
    """Attention's KV reads as a share of the pass's bytes, by context: weights dominate short."""
    m = ch.model.with_dtype(ch.dtype)
    rows = [{_("context"): f"{c:,}"} | {_(SHARE_COLUMNS[k]) if k in SHARE_COLUMNS else k: f"{v:.0%}"
                                        for k, v in treeattn.attention_share(m, parents, c, q_block, ch.batch).items()}
            for c in SHARE_CONTEXTS]
    st.dataframe(rows, hide_index=True)
    st.caption(_("Attention's KV reads as a share of every byte the pass moves ({model} weights {mb:,.0f} MB, read "
                 "once for the batch of {batch}). At short context the weights dominate and the method hardly "
                 "matters; at long context the KV reads are most of the pass, and each extra load of the context "
                 "costs a full pass over it.").format(model=m.name, mb=roofline.weight_bytes(m) / 1e6,
                                                     batch=ch.batch))
