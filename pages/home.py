import streamlit as st

from paradec.plots.kpis import cost_figure
from paradec.plots.style import MEASURED
from ui import sources
from ui.style import chart, header

st.title("paradec: parallel decoding, step by step")
left, right = st.columns([3, 2])
with left:
    st.markdown("""
**Why one token at a time wastes the hardware.** To write each token, a language model runs a
forward pass that reads *every* weight from memory, then does very little arithmetic with them.
The chip waits on memory, not on maths: one pass over 8 tokens costs far less than 8 passes over
one (the chart, timed on this model). Plain decoding still spends one full pass per token.

**Parallel decoding** makes each pass of the big model (the *target*, **p**) commit several tokens,
and stays exact: the text is the one the target alone would write (greedy), or has exactly its
distribution (sampling). Two families:

1. **Draft, then verify.** Something cheap guesses the next tokens: a small draft model **q**
   (speculative sampling), text copied from the prompt (prompt lookup), or extra heads on the
   target (Medusa, EAGLE: coming). The target checks every guess in ONE pass and keeps the
   longest run it agrees with, plus one token of its own.
2. **Guess and iterate.** The model fills a whole window of future positions at once and
   refines it until it stops changing (Jacobi decoding), or collects n-grams from such a window
   and verifies them as drafts (Lookahead decoding).

One number to watch: **τ, tokens per target forward**, the bonus token included (AR = 1.00).
""")
with right:
    header("Cost of a forward pass", MEASURED)
    cost = sources.forward_cost()
    if cost:
        chart(cost_figure(cost), "home.cost")
        st.caption(f"Timed by `make traces` on a CPU ({cost['threads']} threads), after {cost['context_tokens']} "
                   "cached tokens: paradec's forward, which every method decodes with, and Hugging Face's. A GPU "
                   "has far more arithmetic per byte of memory than a CPU, so there many more tokens per pass "
                   "come almost free (the Roofline page).")

st.subheader("Explore")
c = st.columns(3)
c[0].page_link("pages/ar.py", label="Autoregressive: the baseline", icon=":material/looks_one:")
c[1].page_link("pages/sps.py", label="Speculative sampling: draft + verify", icon=":material/call_split:")
c[2].page_link("pages/pld.py", label="Prompt lookup: copy the prompt", icon=":material/content_copy:")
c[0].page_link("pages/jacobi.py", label="Jacobi: iterate to a fixed point", icon=":material/grid_on:")
c[1].page_link("pages/lookahead.py", label="Lookahead: window + n-gram pool", icon=":material/manage_search:")
c[2].page_link("pages/arena.py", label="Arena: every method, one prompt", icon=":material/sports_score:")
c[0].page_link("pages/roofline.py", label="Roofline: when does a method pay off?", icon=":material/show_chart:")
c[1].page_link("pages/benchmark.py", label="Benchmark: every method and its peers", icon=":material/leaderboard:")
st.caption("Each page replays a real recorded run instantly; switch the sidebar to **live** to decode your own "
           "prompt with the bundled SmolLM2-135M-Instruct. Panels say whether their numbers are MEASURED "
           "(timed in the run), FROM RUN (derived from the trace) or MODEL (an analytic formula).")
