import streamlit as st

from paradec import catalog
from paradec.plots.lookahead import window_figure
from paradec.stage import extras
from paradec.traces.trace import Trace
from ui import figures
from ui.controls import controls
from ui.i18n import _
from ui.page import method_page

INTRO = _("""**Lookahead decoding** (Fu et al., 2024) runs Jacobi iterations *and* verification in the
same forward pass. A **window** of W columns × N−1 levels keeps W Jacobi trajectories going; each
pass closes one **n-gram** per column (read down the column, plus the target's new prediction) and
stores it in a **pool** keyed by its first token. Up to G pooled n-grams that start with the
pending token are **verified** in that same pass; the target keeps the longest one it agrees
with, plus one token of its own, so greedy output is exactly AR's.""")

HOW = _("""1. **Lookahead branch**: feed the window (N−1 levels of W tokens; level 0 starts at the pending
   token). Column *c* of level *j* sits at position +*c*+*j* and attends to level 0 up to column *c*
   and to column *c* of the levels above: one trajectory of consecutive positions.
2. **Verification branch**: look the pending token up in the pool, merge its up-to-G n-grams into a
   tree of candidates, each seeing only its own prefix.
3. **One forward** over both branches with the **combined mask**: the two branches never see each other.
4. **Accept** the longest candidate prefix that equals the target's argmax (+ its own token);
   the window's last level predictions close W n-grams into the pool and become the next level.""")


def window(p: dict) -> str:
    """A window's settings and the tokens its pass carries, (W + G)(N - 1)."""
    if not p:
        return "?"
    w, n, g = p["window"], p["ngram"], p["candidates"]
    return _("W = {w}, N = {n}, G = {g}: a {tokens}-token pass").format(w=w, n=n, g=g, tokens=(w + g) * (n - 1))


DEFAULTS = _("""A verify pass over a handful of tokens costs about one one-token pass on this CPU, and the
cost grows past a dozen (16 tokens: {cost16} one-token passes; the Roofline page's measured curve).
Lookahead's pass carries (W + G)(N - 1) tokens, the pending one among them, and every window token costs its share
whether or not its n-grams are ever used. So the tuner (`python -m paradec tune`, on this machine) chose
{tuned} for the CPU preset (`assets/presets/cpu.json`); the Benchmark page's run measured τ {tau} and {speedup} AR
over its {prompts} held-out prompts (`{bench_file}`). The catalog's defaults give {defaults}, and the recorded run
on this page {recorded}, to show the window at work. On a GPU the window is nearly free, so wider windows and
longer n-grams pay there.""").format(
    cost16=figures.pass_cost(16), tuned=window(figures.preset("lookahead")), tau=figures.bench("lookahead", "tau"),
    speedup=figures.bench("lookahead", "speedup"), prompts=figures.bench_prompts(), bench_file=figures.BENCH_FILE,
    defaults=window(catalog.method("lookahead").defaults()), recorded=window(figures.recorded("lookahead-greedy")))


def params() -> dict:
    return controls("lookahead", ["window", "ngram", "candidates"])


def panels(trace: Trace, i: int) -> dict:
    with st.expander(_("Why a small window on this CPU")):
        st.markdown(DEFAULTS)
    return {"window": window_figure(trace, i)}


NOTICE = (_("One pass does two jobs: a Jacobi window that keeps making n-grams, and a check of pooled ones."),
          _("A pooled n-gram is tried when it starts with the last committed token; the longest agreement wins."),
          _("The combined mask: window rows see only their own trajectory, verify rows their own n-gram."))
method_page("lookahead", _("Lookahead decoding: window + pool"), INTRO, HOW, params, panels=panels,
            extra=extras.lookahead, notice=NOTICE)
