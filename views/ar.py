import streamlit as st

from ui.i18n import _
from ui.page import method_page

INTRO = _("""The baseline: **one target forward pass per token**. Each pass reads every weight of the
model to produce a single token, so the hardware mostly waits on memory. Every other method
must produce exactly this text under greedy decoding (and the same distribution when sampling).""")

HOW = _("""1. Feed the pending token (the last one committed) to the model, with the KV cache of everything before it.
2. The target gives its distribution **p** over the next token; take the argmax (greedy) or sample from p.
3. Commit that token and repeat. Nothing is drafted, so the tree is just the pending token and
   the target's token, and **τ = {tau:.2f}** (tokens per target forward) by definition.""").format(tau=1.0)


def params() -> dict:
    st.caption(_("Autoregressive decoding has no parameters of its own: it uses the sidebar's settings."))
    return {}


AR_TAU = 1.0  # tokens per target forward: one, by definition
NOTICE = (_("One target forward per token: τ = {tau:.2f}, the baseline every other method is measured against.").format(
    tau=AR_TAU),
          _("Every token is the target's own: nothing is drafted, so the tree and mask stay empty."),
          _("A pass reads all the weights for one token: the Roofline page shows why that leaves the hardware idle."))
method_page("ar", _("Autoregressive decoding (the baseline)"), INTRO, HOW, params, notice=NOTICE)
