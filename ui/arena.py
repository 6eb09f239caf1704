"""The arena: every available method on the same prompt and settings, side by side."""
from __future__ import annotations

import streamlit as st

from paradec import catalog
from paradec.plots import arena as plots
from paradec.plots import eagle as eagle_plots
from paradec.plots.style import FROM_RUN, MEASURED
from paradec.plots.tokens import stream_html
from paradec.stage.figure_text import stream_words
from paradec.traces.trace import Trace

from . import figures, live, sources
from .i18n import _, words
from .presets import DEFAULT_DRAFT
from .sidebar import current
from .style import chart, header

PER_ROW = 5  # token streams side by side


def methods() -> dict[str, str | None]:
    """The methods the arena races (those whose greedy text is the target's), each with the draft it needs."""
    return {m.name: DEFAULT_DRAFT if m.needs == "draft" else None
            for m in catalog.METHODS.values() if m.greedy_is_targets}


def lookup_note(runs: dict[str, Trace]) -> str | None:
    """What EAGLE-3's prompt-lookup branch did in this race (None: no EAGLE-3 run with one)."""
    t = runs.get("eagle3")
    if t is None or not t.params.get("lookup"):
        return None
    n = eagle_plots.lookup_tally(t)
    return _("`eagle3` here also verifies a **prompt-lookup branch** beside its tree (lookup = {lookup}: what "
             "followed the last n-gram's earlier occurrence): of its {steps} steps, {had} had one, and on {copy} "
             "the target followed the copy past the head's tree.").format(
        lookup=t.params["lookup"], steps=len(t.steps), had=n["steps"], copy=n["copy"])


def traces() -> dict[str, Trace]:
    """The live set when one was run on the sidebar's settings, else the recorded set."""
    s = current()
    if s.live:
        try:
            keys = {m: live.key(s, m, {}, d) for m, d in methods().items()}
            got = live.cached(("set", *sorted(keys.items())))
            if got is None and st.button(_("Run every method live on these settings"), type="primary"):
                bar, decoding = st.progress(0.0, text=_("decoding…")), _("decoding… {f:.0%}")
                got = live.run_set(keys, lambda f, text=None: bar.progress(f, text=text or decoding.format(f=f)))
                bar.empty()
            if got is not None:
                return got
            st.info(_("Live mode: press the button to race the methods on the sidebar settings. "
                      "Meanwhile, the recorded race:"))
        except live.errors() as e:
            st.error(str(e))
    return sources.arena()


def badge(trace: Trace, ar: Trace | None) -> str:
    if ar is None:
        return ""
    if trace.token_ids == ar.token_ids:
        return ":green-badge[" + _("identical to AR") + "]"
    if trace.sampling.get("temperature", 0) > 0:
        return ":orange-badge[" + _("differs from AR: sampling, same distribution") + "]"
    return ":red-badge[" + _("differs from AR") + "]"


def show(runs: dict[str, Trace]) -> None:
    ar = runs.get("ar")
    t = next(iter(runs.values()))
    st.caption(_("Prompt: “{prompt}” · {model} · temperature {temperature} · {device}/{dtype} · all runs in one "
                 "process, one after the other").format(prompt=t.prompt[:100], model=t.model,
                                                         temperature=t.sampling.get("temperature"), device=t.device,
                                                         dtype=t.dtype))
    items = list(runs.items())
    for start in range(0, len(items), PER_ROW):  # rows of five: ten narrow columns wrap every word
        for col, (m, tr) in zip(st.columns(PER_ROW), items[start : start + PER_ROW]):
            with col:
                st.markdown(f"**{m}** {badge(tr, ar)}")
                st.html(stream_html(tr, len(tr.steps) - 1, False, stream_words(words())))
    header(_("Race replay in sync"), MEASURED, help=_("Each bar grows with the tokens a method had committed at "
           "that moment of its measured run: press ▶ Race, or drag the slider through the milliseconds."))
    chart(plots.race_figure(runs), "arena.race")
    c1, c2 = st.columns(2)
    with c1:
        header(_("Tokens per target forward (τ)"), FROM_RUN, help=_("How many tokens one pass of the target "
               "committed, on average, bonus included. AR is 1.00; higher means fewer target passes."))
        chart(plots.bars_figure({m: tr.tau for m, tr in runs.items()}, "τ (AR = 1.00)"), "arena.tau")
    with c2:
        header(_("Speedup against AR"), MEASURED, help=_("Tokens per second over AR's, both timed in the same "
               "process: above 1× the method was faster here, below 1× slower."))
        if ar is not None:
            speed = {m: tr.speedup_over(ar) for m, tr in runs.items() if tr.wall_s}
            chart(plots.bars_figure(speed, _("tokens/s ÷ AR's tokens/s"), "{:.2f}×"), "arena.speed")
    header(_("Acceptance length"), FROM_RUN, help=_("How many tokens each step committed, per method: AR's are all "
           "1; a method whose bars sit further right commits more per target pass."))
    chart(plots.length_histogram(runs), "arena.hist")
    st.caption(_("Speedup divides each method's tokens/s by AR's, decoded in the same process on this machine "
               "(with the same tokens, that is AR's decoding time over the method's); on this CPU a "
               "verify pass over 8 tokens costs {cost8}× a one-token pass and one over 16 {cost16}× "
               "(`assets/traces/forward_cost.json`; on a GPU about 1×), and drafting adds its own time, so a method "
               "gains only when τ is well above those: values below 1× are real results, not bugs. "
               "Every method runs on torch's thread pool; mirror adds a worker thread for its draft, "
               "a second core when the pool has one thread (the recorded set).").format(
        cost8=figures.pass_cost(8), cost16=figures.pass_cost(16)))
