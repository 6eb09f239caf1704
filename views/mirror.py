import streamlit as st

from paradec.plots import timeline
from paradec.plots.style import FROM_RUN, MEASURED
from paradec.traces.trace import Trace
from ui import figures, presenter, sources
from ui.controls import controls
from ui.i18n import _
from ui.page import method_page
from ui.presets import DEFAULT_DRAFT
from ui.style import chart, header

INTRO = _("""**Parallel draft-and-verify** (PEARL, Liu et al. 2024; Mirror Speculative Decoding, 2025):
in speculative sampling one model always waits for the other: the target while the draft drafts, the
draft while the target verifies. Here the draft **keeps drafting while the target verifies**, on a
worker thread of its own: it bets on how the verify pass will end (which tokens the target keeps
and what it writes after them) and drafts the next chain for each of its best bets. If one pays, the
next proposal is ready the moment the verify pass ends and drafting has left the critical path. If
none does, the draft drafts from what was committed, as sps would. **Lossless**: the
target's rejection sampling is untouched, and the worker draws with its own seeded generator.""")

HOW = _("""1. **Propose** a chain of *k* tokens with the draft (the first step, or after a lost bet).
2. **Start the worker**: it lists the ways the verify pass can end, *(j, b)*: the target accepts
   d1..dj and writes *b* (its correction of d(j+1), or the bonus token after all *k*). It guesses *b*
   among q's runners-up, ranks the outcomes by the draft's own odds (q(d) standing in for the chance
   that d is accepted) and drafts *k* tokens after each of the best **bets**, most likely first.
3. **Verify** the chain in one target forward *at the same time* (the timeline's two lanes overlap).
4. **Settle**: the worker stops. If the real outcome was among the chains it finished, that chain is
   the next proposal (a **hit**: no drafting on the critical path); else the draft drafts it now (a
   **miss**), exactly as sps would. Each outcome's chain has its own seed, so hit or miss, the
   tokens are the same: the worker's speed never changes the output.
5. `parallel=false` runs the same drafts one after the other: the sequential baseline.""")

DRAFT_MS, VERIFY_MS = figures.step_ms("mirror-sequential")
CPU_NOTE = _("""**On this 2-core CPU** hiding the drafting can win at most its share of a step ({draft_ms} ms a draft
token against {verify_ms} ms a verify pass in the sequential run above), and only when a bet pays. Compare the
verify passes of the two runs above: with the worker drafting beside it, each verify pass gets **slower**, even
with one torch thread per worker on its own core. The two threads share one Python interpreter (the GIL: every torch
call of either hands it over) and the memory bus (a draft token streams ~10-20 MB of weights, a verify
pass ~540 MB, both through the same memory): on this machine that costs the target more than the
hidden drafting saves. PEARL and Mirror-SD put the draft on **other hardware** (another GPU, an NPU):
on a GPU target, `draft_device=cpu` runs the worker on a CPU copy of the draft (not yet run: no GPU
was lent), where the verify pass has the GPU to itself.""").format(draft_ms=DRAFT_MS, verify_ms=VERIFY_MS)


def params() -> dict:
    return controls("mirror", ["k", "bets", "parallel", "draft_device"])


def draft() -> str:
    return st.text_input(_("Draft model: trained, self:N, a hub id or a local folder"), DEFAULT_DRAFT,
                         key="mirror.draft").strip() or DEFAULT_DRAFT


def panels(trace: Trace, i: int) -> dict:
    window = range(max(0, i - 4), i + 4)
    title = _("steps {first}–{last}").format(first=window.start, last=min(window.stop, len(trace.steps)) - 1)
    fig = timeline.gantt_figure(trace, title, window)
    header(_("The two workers around this step"), MEASURED,
           help=_("When the draft worker and the target worker ran around this step, on the run's clock: a paid bet "
                  "means the next chain was drafted while the target verified, so drafting cost no time."))
    chart(fig, "mirror.fig.window")
    rec = trace.steps[i].record
    if rec.hit is not None:
        if rec.hit:
            text = _("Step {i}: the worker's bet paid: this chain was drafted during the last verify pass; "
                     "propose() waited {wait_ms:.1f} ms for the worker.")
        else:
            text = _("Step {i}: the worker's bet was lost: this chain was drafted now; "
                     "propose() waited {wait_ms:.1f} ms for the worker.")
        st.caption(text.format(i=i, wait_ms=rec.wait_ms))
    return {"timeline": fig}


def table(row: dict) -> dict:
    """A row of timeline.summary with its column names and run name in the visitor's language."""
    names = {"run": _("run"), "tokens": _("tokens"), "target forwards": _("target forwards"),
             "wall ms": _("wall ms"), "verify ms": _("verify ms"),
             "verify ms / pass (median)": _("verify ms / pass (median)"),  # not taught
             "drafting, target waits (ms)": _("drafting, target waits (ms)"),  # not taught
             "drafting during verify (ms)": _("drafting during verify (ms)"),  # not taught
             "bets won": _("bets won")}
    runs = {"parallel": _("parallel"), "sequential": _("sequential")}
    return {names.get(k, k): runs.get(v, v) if k == "run" else v for k, v in row.items()}


def compare() -> None:
    runs = {name: sources.load(path) for name, path in sources.recorded("mirror").items()}
    st.subheader(_("Sequential vs parallel, the same prompt and draft"))
    if not {"greedy", "sequential"} <= set(runs):
        st.info(_("Needs the recorded runs mirror-greedy and mirror-sequential (`make traces`)."))
        return
    seq, par = runs["sequential"], runs["greedy"]
    st.caption(_("Prompt: “{prompt}” · {model} · draft: {draft} · greedy · both runs recorded one after the other "
                 "in one process; the same tokens (lossless).").format(
        prompt=par.prompt[:100], model=par.model, draft=par.draft_model))
    header(_("Runs side by side"), FROM_RUN, MEASURED,
           help=_("The same prompt and draft with the draft run after the verify pass (sequential) and during it "
                  "(parallel): τ stays the same, the time per token is what changes."))
    st.dataframe([table(timeline.summary(seq)), table(timeline.summary(par))], hide_index=True)
    steps = range(min(12, len(seq.steps), len(par.steps)))
    until = max(timeline.end_ms(seq, steps), timeline.end_ms(par, steps))  # one time scale for both
    for key, name, t in (("seq", _("sequential (parallel=false)"), seq), ("par", _("parallel"), par)):
        title = _("{run}: the first {n} steps").format(run=name, n=len(steps))
        chart(timeline.gantt_figure(t, title, steps, until_ms=until), f"mirror.fig.{key}")
    st.markdown(CPU_NOTE)


NOTICE = (_("Drafting and verifying overlap: the draft bets on the next step while the target checks this one."),
          _("The timeline shows both workers; a wrong bet throws the early draft away."),
          _("On this 2-core CPU the two workers share the cores: the gain needs a second device."))
method_page("mirror", _("Parallel draft-and-verify"), INTRO, HOW, params, draft, panels=panels, notice=NOTICE)
with presenter.fold(_("Sequential vs parallel, the same prompt and draft")):
    compare()
