"""The Numerics page's parts: the recorded float32 / bfloat16 runs (assets/numerics.json)."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from paradec.plots import numerics as plots
from paradec.plots.style import FROM_RUN

from . import sources
from .i18n import _
from .style import chart, header

DATA = Path(__file__).resolve().parents[1] / "assets" / "numerics.json"


def summary(data: dict) -> list[dict]:
    out = []
    for r in data["runs"]:
        part, tops = r["parts_at"], r["top_at_part"]
        out.append({_("prompt"): r["prompt"][:50], _("answer tokens"): len(r["tokens"]["float32"]),
                    _("texts part at token"): _("never") if part is None else str(part + 1),
                    _("float32 gap there"): round(plots.gap(tops["float32"]), 4) if tops else None,
                    _("flips when re-read"): sum(p["bf16_token"] != p["token"] for p in r["positions"])})
    return out


def show() -> None:
    if not DATA.is_file():
        st.warning(_("No recorded numerics yet: `python scripts/record_numerics.py` records them (a minute or "
                     "two)."))
        return
    data = sources.json_file(DATA)
    st.caption(_("Recorded with {model} on {device} (torch {torch}): {decoding}, up to {new_tokens} new tokens, each "
                 "prompt in float32 and in bfloat16.").format(model=data["model"], device=data["device"],
                                                               torch=data["torch"], decoding=data["decoding"],
                                                               new_tokens=data["max_new_tokens"]))
    header(_("Every prompt"), FROM_RUN, help=_("Where the bfloat16 text first differs from the float32 one, and how "
                                               "close the float32 model's two best tokens were there (the logit gap: "
                                               "0 is a tie)."))
    st.dataframe(summary(data), hide_index=True)
    runs = {r["prompt"][:60]: r for r in data["runs"]}
    parted = [k for k, r in runs.items() if r["parts_at"] is not None]
    pick = st.selectbox(_("Prompt"), list(runs), index=list(runs).index(parted[0]) if parted else 0, key="num.prompt")
    run = runs[pick]
    header(_("The two answers"), FROM_RUN, help=_("Both greedy answers; highlighted: each one's text after the first "
                                                   "token where they differ."))
    st.html(plots.texts_html(run))
    left, right = st.columns(2)
    with left:
        header(_("Where they part"), FROM_RUN, help=_("Each run's own top tokens at the step where the texts part: "
                                                      "two candidates nearly tied, and bfloat16's rounding puts the "
                                                      "other one first."))
        if run["top_at_part"]:
            chart(plots.top_figure(run), "num.top")
            low = run["top_at_part"]["bfloat16"]
            if len(low) > 1 and low[0][1] == low[1][1]:
                st.caption(_("bfloat16 gives its two best tokens the same probability: their logits rounded to "
                             "the same number, an exact tie, and argmax takes the lower token id."))
        else:
            st.info(_("On this prompt the two answers are the same, token for token."))
    with right:
        header(_("The logit gap at every token"), FROM_RUN, help=_("The float32 answer re-read in one pass by both "
                                                                   "models: each dot is one position's gap between "
                                                                   "the two best logits; red where bfloat16 would "
                                                                   "pick another token. The red dots sit at the "
                                                                   "smallest gaps."))
        chart(plots.gaps_figure(run), "num.gaps")
