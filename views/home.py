import streamlit as st

from paradec.plots.kpis import cost_figure
from paradec.plots.style import MEASURED
from ui import guide, live, sources
from ui.i18n import _
from ui.style import chart, header

st.title(_("paradec: parallel decoding, step by step"))
st.markdown(_("""**Start here.** A language model writes one token per forward pass, and each pass reads every
weight: the chip mostly waits on memory. **Parallel decoding** makes one pass of the big model commit several
tokens, and the text stays exactly what the model alone would write. Follow the path below from left to right:
every page replays a real recorded run, opens on a step worth seeing, and ends with a link to the next one."""))
guide.links()
st.caption(_("Each page replays a real recorded run instantly; switch the sidebar to **live** to decode your own "
             "prompt with the bundled SmolLM2-135M-Instruct. Panels say whether their numbers are MEASURED "
             "(timed in the run), FROM RUN (derived from the trace) or MODEL (an analytic formula); the (?) beside "
             "a panel says what it shows and how to read it."))
st.caption(live.kernel_note())
left, right = st.columns([3, 2])
with left:
    st.markdown(_("""**Why one token at a time wastes the hardware.** One pass over 8 tokens costs far less than
8 passes over one (the chart, timed on this model), yet plain decoding spends one full pass per token.

**Two families** of methods spend that spare room, and both stay exact (greedy: the same text; sampling:
exactly the target's distribution):

1. **Draft, then verify.** Something cheap guesses the next tokens: a small draft model **q**
   (speculative sampling), text copied from the prompt (prompt lookup), heads on the target (Medusa,
   EAGLE), or the target's own first layers (early exit). The target checks every guess in ONE pass and
   keeps the longest run it agrees with, plus one token of its own.
2. **Guess and iterate.** The model fills a window of future positions at once and refines it until it
   stops changing (Jacobi), or collects n-grams from such a window and verifies them (Lookahead).

One number to watch: **τ, tokens per target forward**, the bonus token included (AR = 1.00)."""))
with right:
    header(_("Cost of a forward pass"), MEASURED, help=_("Time of one forward pass of the embedded model by the number "
                                                          "of tokens it processes at once: flat at first, so extra "
                                                          "tokens in a pass come almost free."))
    cost = sources.forward_cost()
    if cost:
        chart(cost_figure(cost), "home.cost")
        with st.expander(_("How this was timed")):
            st.caption(_("Timed by `make traces` on a CPU ({threads} threads), after {context} "
                         "cached tokens: paradec's forward, which every method decodes with, and Hugging Face's. A GPU "
                         "has far more arithmetic per byte of memory than a CPU, so there many more tokens per pass "
                         "come almost free (the Roofline page).").format(threads=cost["threads"],
                                                                         context=cost["context_tokens"]))
