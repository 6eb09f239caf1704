import streamlit as st

from ui import bench, figures
from ui.i18n import _

st.title(_("Benchmark: every method against AR and its peers"))
st.markdown(_("""Results of `python -m paradec bench`: every method decodes the same prompts (Spec-Bench's
first turns, by category) in one process, after AR, and Hugging Face's own `generate`, prompt lookup and
assisted generation run beside them (`--peers hf`), and so can a production engine (`--peers vllm=URL,...`: see
the Production engine page). **Speedup** is tokens/s over AR's on the same
prompts, **τ** tokens per target forward, and *identical* counts runs whose tokens equal AR's."""))
report = bench.pick()
if report:
    st.markdown(figures.benchmark_note(report))
    bench.show(report)
st.divider()
bench.live_run()
