"""The EAGLE page's own panels: the tree growing and reranked, the cut candidates, acceptance
per depth, this session's runs against the recorded one, and EAGLE-1/2/3 compared."""
from __future__ import annotations

import json
import statistics

import plotly.graph_objects as go
import streamlit as st

from paradec import catalog
from paradec.costs.speccost import SpecStep
from paradec.plots import eagle as plots
from paradec.plots.style import FROM_RUN, MEASURED, MODEL
from paradec.traces.trace import Trace

from . import sources
from .i18n import N_, _
from .style import chart, header

VERSIONS = {m.name: m.version for m in catalog.on_page("eagle") if m.version}  # the catalogue's versions
RERANK = "rerank"
COMPARE_PANELS = [  # figure, title, label, help (translated where shown)
    ("tau", "τ", FROM_RUN, N_("Tokens committed per target forward, bonus included, per version (AR = 1.00).")),
    ("speed", N_("Speed"), MEASURED, N_("Measured tokens per second of each version on the same prompt and machine.")),
    ("lengths", N_("Tokens per step"), FROM_RUN, N_("How many tokens each step committed: a better draft tree "
                                                    "commits more of its depth, more often.")),
    ("time", N_("Draft vs verify, per token"), MEASURED, N_("Milliseconds per committed token, split into drafting "
                                                            "(the head's passes) and verifying (the target's tree "
                                                            "pass).")),
]


def panels(trace: Trace, i: int) -> dict:
    """The growth / rerank view of step i with its cut table, then the run-wide panels."""
    cands = plots.candidates(trace, i)
    figs = {}
    if not cands:
        st.markdown(_("First step: nothing drafted. The head needs the target's features, which exist only "
                      "after the prefill."))
    else:
        figs["growth"] = _growth(trace, i, cands)
    _lookup(trace, i)
    left, right = st.columns([1, 1.3])
    with left:
        header(_("Acceptance per depth"), FROM_RUN, help=_("How often the accepted path went one depth deeper, "
                                                           "over the whole run: the tree's depth pays only while "
                                                           "this stays high."))
        figs["per_depth"] = plots.depth_acceptance_figure(trace)
        chart(figs["per_depth"], f"{trace.method}.fig.per_depth")
        st.caption(_("Of the steps whose accepted path reached depth d−1 at a node with a kept child, the share "
                     "that accepted one of those children: how likely the tree is to go one deeper."))
    with right:
        _versus_recorded(trace)
    return figs


def _lookup(trace: Trace, i: int) -> None:
    """The prompt-lookup branch (lookup > 0): which branch this step took, and over the run."""
    if not trace.params.get("lookup"):
        return
    n = plots.lookup_tally(trace)
    header(_("The prompt-lookup branch"), FROM_RUN, help=_("What followed the last n-gram's earlier occurrence in "
           "the context, grafted onto the head's tree and verified in the same pass: the step keeps whichever "
           "branch the target accepts further."))
    story = plots.lookup_story(trace, i) or _("No n-gram recurred this step: no copied branch.")
    st.markdown(_("{story} Over the run: a copied branch on {steps} of {total} steps; the target followed it past "
                  "the head's tree on {copy}, took the same tokens from both on {both}, and the head's tree on "
                  "{head}.").format(story=story, total=len(trace.steps), **n))


def _growth(trace: Trace, i: int, cands: list[plots.Candidate]) -> go.Figure:
    counts = plots.depth_counts(cands)
    frames = [*range(1, len(counts) + 1), RERANK]
    # the labels translated now, not in format_func: it may be called outside the page's run (AppTest does)
    rerank, expand = _("rerank (keep the best)"), _("expand: depth {depth}")
    frame = st.select_slider(_("Grow the tree: expand depth by depth, then rerank"), frames, value=RERANK,
                             key=f"{trace.method}.grow.{i}",
                             format_func=lambda v: rerank if v == RERANK else expand.format(depth=v))
    fig = plots.growth_figure(trace, i, None if frame == RERANK else frame)
    # full width, the cut candidates below: beside a table, the deepest labels had no room at 1024 px
    header(_("The draft tree, drafted then reranked"), FROM_RUN,
           help=_("Every candidate EAGLE's head drafted this step, by depth. Step through the frames to watch the "
                  "tree grow one depth at a time; the rerank then keeps the most confident candidates, the tree "
                  "the target verifies."))
    chart(fig, f"{trace.method}.fig.growth")
    st.caption(_("x = depth; marker size = cumulative confidence exp(score), the product of the draft's q along "
                 "the path. While growing, dark = expanded (fed to the head for children). After the rerank, "
                 "outlined = was expanded, green = accepted path; kept nodes are the tree and mask rows below "
                 "(hover: node and mask row). Per depth drafted / expanded / kept: {counts}").format(
        counts=", ".join(f"d{r['depth']} {r['drafted']}/{r['expanded']}/{r['kept']}" for r in counts)))
    rows = plots.cut_rows(trace, i)
    header(_("Cut by the rerank ({n})").format(n=len(rows)), FROM_RUN,
           help=_("The candidates drafted this step that the rerank left out of the verified tree, with their "
                  "cumulative confidence: drafting them cost head passes, but verifying them was judged not worth "
                  "the wider pass."))
    if rows:
        names = {"candidate": _("candidate"), "token": _("token"), "depth": _("depth"), "rank": _("rank"),
                 "parent": _("parent"), "confidence": _("confidence"), "why cut": _("why cut"),
                 "its children": _("its children")}
        st.dataframe(_headed(rows, names), hide_index=True, height=300)
    else:
        st.markdown(_("Nothing cut: EAGLE-1's static tree verifies every candidate.") if trace.method == "eagle"
                    else _("Nothing cut: total_tokens covers every candidate drafted."))
    return fig


def _headed(rows: list[dict], names: dict[str, str]) -> list[dict]:
    """A table's rows with their column names in the visitor's language (names: key -> translated name)."""
    return [{names.get(k, k): v for k, v in r.items()} for r in rows]


def _remember(trace: Trace) -> list[dict]:
    """Every EAGLE run seen this session (recorded, imported or live), for comparing settings."""
    runs = st.session_state.setdefault("eagle.runs", {})
    p = {k: v for k, v in trace.params.items() if k != "head"}
    key = json.dumps([trace.method, p, trace.prompt, trace.sampling, trace.wall_s], sort_keys=True)
    runs[key] = {"version": VERSIONS.get(trace.method, trace.method), "settings": json.dumps(p),
                 "τ": round(trace.tau, 2),
                 "ms / token": round(1e3 * trace.wall_s / max(1, trace.new_tokens), 1),
                 "temperature": trace.sampling.get("temperature", 0), "prompt": trace.prompt[:40]}
    return list(runs.values())


def _versus_recorded(trace: Trace) -> None:
    """τ and time per token of the shown run against the recorded run of the same version."""
    header(_("This run against the recorded one"), MEASURED, FROM_RUN,
           help=_("τ and milliseconds per token of the run shown against the recorded run of the same EAGLE "
                  "version, and every EAGLE run of this session in a table, to compare settings."))
    files = sources.recorded(trace.method)
    recorded = sources.load(files["greedy"]) if "greedy" in files else None
    if recorded is not None and trace is not recorded:  # recorded traces are loaded once: the same object
        _remember(recorded)
        ms, rec_ms = (1e3 * t.wall_s / max(1, t.new_tokens) for t in (trace, recorded))
        c = st.columns(2)
        c[0].metric("τ", f"{trace.tau:.2f}", _("{delta:+.2f} vs recorded").format(delta=trace.tau - recorded.tau))
        c[1].metric(_("ms / token"), f"{ms:.0f}", _("{delta:+.0f} vs recorded").format(delta=ms - rec_ms),
                    delta_color="inverse")
    names = {"version": _("version"), "settings": _("settings"), "ms / token": _("ms / token"),
             "temperature": _("temperature"), "prompt": _("prompt")}
    st.dataframe(_headed(_remember(trace), names), hide_index=True)
    st.caption(_("Move depth, top_k and total_tokens (or the tree) under **Parameters**, switch the sidebar to "
                 "live and run: each run lands here. The recorded runs used one CPU thread; a live run uses the "
                 "app's."))


def compare(ar: Trace | None) -> None:
    """EAGLE-1, -2 and -3's recorded greedy runs on the same prompt, side by side."""
    runs = {VERSIONS[v]: sources.load(f["greedy"]) for v in VERSIONS if "greedy" in (f := sources.recorded(v))}
    st.subheader(_("EAGLE-1, -2 and -3 on the same prompt"))
    if len(runs) < 2 or len({t.prompt for t in runs.values()}) > 1:
        st.info(_("Needs the recorded greedy runs of at least two versions on one prompt (`make traces`)."))
        return
    t = next(iter(runs.values()))
    st.caption(_("Prompt: “{prompt}” · {model} · greedy · recorded one after the other in one process").format(
        prompt=t.prompt[:100], model=t.model))
    header(_("Runs side by side"), FROM_RUN, MEASURED,
           help=_("EAGLE-1, -2 and -3 decoding the same prompt greedily, one after the other in one process: τ, "
                  "tokens per step, and the measured draft and verify times."))
    names = {"run": _("run"), "acceptance": _("acceptance"), "tokens / s": _("tokens / s"),
             "draft ms / step": _("draft ms / step"), "verify ms / step": _("verify ms / step"),
             "tokens verified / step": _("tokens verified / step"),  # not taught: the keys name the columns
             "head passes / step": _("head passes / step")}  # not taught: the keys name the columns
    st.dataframe(_headed(plots.compare_rows(runs), names), hide_index=True)
    figs = plots.compare_figures(runs)
    cols = [c for __ in range(2) for c in st.columns(2)]
    for col, (name, title, label, help_text) in zip(cols, COMPARE_PANELS):
        with col:
            header(_(title), label, help=_(help_text))
            chart(figs[name], f"eagle.compare.{name}")
    _break_even(runs, ar)


def _break_even(runs: dict[str, Trace], ar: Trace | None) -> None:
    """speedup = τ · AR step / (draft + verify): what each run's measured step costs ask of τ."""
    if ar is None or len(ar.steps) < 2 or ar.prompt != next(iter(runs.values())).prompt:
        return
    ar_ms = statistics.median(s.verify_ms for s in ar.steps[1:])  # one-token forwards; the prefill left out
    header(_("What τ must beat here"), MODEL,
           help=_("The break-even τ of each version: its measured step (draft + verify) in units of a measured AR "
                  "step. Above it the version is faster than AR on this machine, below it slower."))
    lines = []
    for (name, t), row in zip(runs.items(), plots.compare_rows(runs)):
        step = SpecStep(ar_ms, row["draft ms / step"], row["verify ms / step"])
        lines.append("- " + _("**{name}**: a step costs {ms:.0f} ms = {steps:.2f} AR steps, so it needs "
                              "τ ≥ {steps:.2f}; with τ = {tau:.2f}: {speedup:.2f}×").format(
            name=name, ms=step.total, steps=step.break_even_tau, tau=t.tau, speedup=step.speedup(t.tau)))
    st.markdown(_("AR's one-token forward: {ms:.0f} ms (median of the recorded AR run on this prompt, an earlier "
                  "run: load on the machine may differ).").format(ms=ar_ms) + "\n" + "\n".join(lines))
