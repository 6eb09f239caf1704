import streamlit as st

from ui import tune
from ui.i18n import _

st.title(_("Tune: each method's settings for a machine and a task"))
st.markdown(_("""Every method has settings (tokens drafted, tree shape and size, EAGLE's depth, top_k and
total_tokens, Lookahead's W, N and G, the draft-length rule) whose best values depend on the machine and on
the task. `python -m paradec tune` searches them by successive halving (the candidates that lose on a few
prompts stop early), then compares the finalists with today's defaults on **held-out** prompts in the same
process. Each point is one setting: hover for its values."""))
state = tune.pick()
if state:
    tune.show(state)
