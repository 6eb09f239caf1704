import streamlit as st

from ui import batching, learn, measured_cost, memory, quiz, roofline
from ui.i18n import _

st.title(_("Roofline: why one token at a time wastes the hardware"))
st.markdown(_("""A forward pass reads every weight once however many tokens it processes, and does about
two FLOPs per weight per token. Its **arithmetic intensity** (FLOPs per byte moved) therefore grows
with the tokens in the pass. Below the chip's **ridge point** (peak FLOP/s ÷ memory bandwidth) the pass
waits on memory, and extra tokens ride along almost free: AR decoding sits far left, a verify pass of
k drafted tokens k + 1 times further right, a prefill near or past the ridge. Parallel decoding spends
that free room; it pays only while the pass stays left of the ridge and τ beats the step's cost. Where the ridge
lies depends on the chip, the model and the number format: the line under the settings says it for the ones
chosen."""))

quiz.questions("roofline", learn.roofline_questions())  # predict mode: before the measured curve is shown
choice = roofline.choose()
st.markdown(roofline.where_it_stands(choice))
trace, i = roofline.pick_step()
roofline.roofline_panel(choice, trace, i)
measured_cost.section()
roofline.what_if(choice)
roofline.losing_runs()
roofline.tree_attention(choice)
batching.section()
memory.gpu_table()
