"""The sps page's comparison of draft-length rules: the recorded runs that differ only in how
long each step's draft gets, side by side."""
from __future__ import annotations

import streamlit as st

from paradec.plots import draft_length as plots
from paradec.plots.style import FROM_RUN, MEASURED

from . import sources
from .style import chart, header

RULES = ("fixed", "heuristic", "confidence", "learned")  # recorded as assets/traces/sps-RULE.json


def compare() -> None:
    files = sources.recorded("sps")
    runs = {r: sources.load(files[r]) for r in RULES if r in files}
    st.subheader("How long should a draft be? Four rules on the same prompt")
    if len(runs) < 2 or len({t.prompt for t in runs.values()}) > 1:
        st.info("Needs the recorded sps runs of at least two draft-length rules on one prompt (`make traces`).")
        return
    t = next(iter(runs.values()))
    st.markdown(
        "**fixed** drafts k tokens every step. **heuristic** grows k by 2 after a fully accepted draft and shrinks "
        "it by 1 after a rejection. **confidence** stops once the draft's top probability falls below the "
        "threshold. **learned** stops once a logistic regression on the draft's top probability, the margin to the "
        "second, its entropy and the position says the chance that the token is committed (the product of "
        "predicted acceptances along the chain) is below the threshold; it was fitted on the draft's own accepts "
        "and rejects on prompts it never trained on (`python -m paradec.train stop`, "
        "`assets/drafters/sps-smollm2/stop.json`). Every extra token costs a draft pass and a wider verify pass; "
        "it pays only if it is accepted.")
    st.caption(f"Prompt: “{t.prompt[:100]}” · {t.model} · draft: {t.draft_model} · greedy · recorded one after "
               "the other in one process, one CPU thread (one run each: timings move with the machine's load)")
    header("Draft length per step", FROM_RUN)
    chart(plots.lengths_figure(runs), "sps.rules.lengths")
    header("Runs side by side", FROM_RUN, MEASURED)
    st.dataframe(plots.rows(runs), hide_index=True)
    cols = st.columns(3)
    with cols[0]:
        header("τ", FROM_RUN)
        chart(plots.tau_figure(runs), "sps.rules.tau")
    with cols[1]:
        header("Draft vs verify, per token", MEASURED)
        chart(plots.time_figure(runs), "sps.rules.time")
    if "learned" in runs:
        with cols[2]:
            header("The learned rule's chances", FROM_RUN)
            chart(plots.calibration_figure(runs["learned"]), "sps.rules.calibration")
            st.caption("Each drafted token's predicted chance of being committed, binned, against the share that "
                       "was (marker label: tokens in the bin).")
