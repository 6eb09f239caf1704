import streamlit as st

from ui import numerics
from ui.i18n import _

st.title(_("Numerics: why bfloat16 can part from float32"))
st.markdown(_("""Greedy decoding takes the most likely token, so it is exact only as long as the arithmetic
is. **bfloat16** keeps about three significant digits: where the model's two best tokens are nearly tied,
rounding can put the other one first, and from that token on the text differs, though both runs are greedy.
This is also why every method here is checked against AR in **float32**: a parallel method computes the
same logits in a different order (several tokens per pass), which moves the last digits too."""))
numerics.show()
