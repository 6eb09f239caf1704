import streamlit as st

from ui import arena, figures
from ui.i18n import _

st.title(_("Arena: every method, one prompt"))
st.markdown(_("""The same prompt and settings decoded by every available method, one after the other in
one process. **τ** counts tokens per target forward (bonus included), **speedup** divides each method's
tokens/s by AR's (the same as AR's decoding time over the method's when the tokens are the same), and the
badge checks that the output equals AR's token for token (greedy decoding in float32; see docs/methods.md's
note on near-ties)."""))
runs = arena.traces()
if runs:
    st.markdown(figures.arena_note(runs))
    if note := arena.lookup_note(runs):
        st.caption(note)
    arena.show(runs)
else:
    st.warning(_("No recorded arena traces in assets/traces/arena: run `make traces`, or switch to live."))
