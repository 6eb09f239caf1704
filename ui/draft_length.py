"""A method page's comparison of draft-length rules: the recorded runs that differ only in how
long each step's draft gets (assets/traces/METHOD-RULE.json), side by side. sps and early exit
draft chains (tokens per step); EAGLE and Medusa draft trees (depths per step)."""
from __future__ import annotations

import streamlit as st

from paradec.plots import draft_length as plots
from paradec.plots.style import FROM_RUN, MEASURED

from . import sources
from .controls import control
from .i18n import N_, _
from .style import chart, header

RULES = ("fixed", "heuristic", "confidence", "learned")  # recorded as assets/traces/METHOD-RULE.json
LEARNED = N_("**learned** stops once a logistic regression on the draft's top probability, the margin to the second, "
           "its entropy and the position says the chance that the token is committed (the product of predicted "
           "acceptances along the chain, or along the branch a tree asks on) is below the threshold; it was fitted "
           "on the sps draft's own accepts and rejects on prompts it never trained on (`python -m paradec.train "
           "stop`, `assets/drafters/sps-smollm2/stop.json`), and any other draft borrows it: its features mean the "
           "same for every draft distribution.")


def compare(method: str, rules_text: str, unit: str = "tokens") -> None:
    """rules_text: what the four rules mean for this method; unit: what a step's draft length
    counts ("tokens" for a chain, "depths" for a tree)."""
    files = sources.recorded(method)
    runs = {r: sources.load(files[r]) for r in RULES if r in files}
    st.subheader(_("How long should a draft be? Four rules on the same prompt"))
    if len(runs) < 2 or len({t.prompt for t in runs.values()}) > 1:
        st.info(_("Needs the recorded {method} runs of at least two draft-length rules on one prompt "
                  "(`make traces`).").format(method=method))
        return
    t = next(iter(runs.values()))
    st.markdown(rules_text + " " + _(LEARNED))
    if t.draft_model:
        st.caption(_("Prompt: “{prompt}” · {model} · draft: {draft} · greedy · recorded one after the other in one "
                     "process, one CPU thread (one run each: timings move with the machine's load)").format(
            prompt=t.prompt[:100], model=t.model, draft=t.draft_model))
    else:
        st.caption(_("Prompt: “{prompt}” · {model} · greedy · recorded one after the other in one process, one CPU "
                     "thread (one run each: timings move with the machine's load)").format(
            prompt=t.prompt[:100], model=t.model))
    tree = unit == "depths"
    header(_("Draft length per step (depths)") if tree else _("Draft length per step (tokens)"), FROM_RUN,
           help=_("How many tokens (or tree depths) each rule drafted at every step of the same prompt. A fixed "
                  "rule is flat; the adaptive rules draft long where the draft agrees with the target and short "
                  "where it does not."))
    chart(plots.lengths_figure(runs, unit=unit), f"{method}.rules.lengths")
    header(_("Runs side by side"), FROM_RUN, MEASURED,
           help=_("One row per draft-length rule on the same prompt: what it drafted, accepted and committed, and "
                  "its measured time per token. The fastest rule is the one with the lowest ms per token, not the "
                  "highest τ."))
    names = {"rule": _("rule"), "settings": _("settings"), "tokens / s": _("tokens / s"),
             "draft length / step": _("draft length / step"),  # not taught: the keys name the columns
             "tokens verified / step": _("tokens verified / step"),  # not taught: the keys name the columns
             "acceptance": _("acceptance"), "draft ms / token": _("draft ms / token"),
             "verify ms / token": _("verify ms / token")}
    st.dataframe([{names.get(k, k): v for k, v in r.items()} for r in plots.rows(runs)], hide_index=True)
    cols = st.columns(3)
    with cols[0]:
        header("τ", FROM_RUN,
               help=_("Tokens committed per target forward, bonus included, per rule. Longer drafts raise τ only "
                      "while their tokens keep being accepted."))
        chart(plots.tau_figure(runs), f"{method}.rules.tau")
    with cols[1]:
        header(_("Draft vs verify, per token"), MEASURED,
               help=_("The measured milliseconds per committed token, split into drafting and verifying. A rule "
                      "that drafts too long spends draft time on tokens the target then rejects."))
        chart(plots.time_figure(runs), f"{method}.rules.time")
    if "learned" in runs:
        with cols[2]:
            header(_("The learned rule's chances"), FROM_RUN,
                   help=_("Calibration of the learned rule: each drafted token's predicted chance of being "
                          "committed (x) against the share that actually was (y). On the diagonal the predictions "
                          "can be trusted to stop a draft."))
            chart(plots.calibration_figure(runs["learned"]), f"{method}.rules.calibration")
            st.caption(_("Each drafted depth's predicted chance of being committed, binned, against the share that "
                         "was (marker label: how many in the bin).") if tree else
                       _("Each drafted token's predicted chance of being committed, binned, against the share that "
                         "was (marker label: how many in the bin)."))


def controls(method: str, cols=None) -> dict:
    """The rule and its threshold as a page's parameter widgets (in two columns given, or a new row)."""
    c = cols or st.columns(2)
    return {"draft_length": control(method, "draft_length", c[0]), "threshold": control(method, "threshold", c[1])}
