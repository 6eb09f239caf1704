import json
from pathlib import Path

import streamlit as st

from paradec import catalog
from paradec.plots.style import FROM_RUN
from ui import draft_length, presenter
from ui.controls import control
from ui.i18n import _
from ui.page import method_page
from ui.style import header

# The adapter's training numbers (paradec.train.early_exit writes them next to the weights).
STATS = Path(__file__).resolve().parents[1] / "assets" / "drafters" / "early-exit-smollm2" / "stats.json"
ADAPTERS = {"": _("shipped adapter (exit layer 2)"), "none": _("none: the plain early exit")}  # value: label

INTRO = _("""**Self-speculative early exit** (Kangaroo, LayerSkip, Draft & Verify) needs no second model: the
target drafts with its **own first layers** and verifies with all of them. The shallow exit's state
was never meant for the LM head, so a plain early exit agrees with the full model rarely; Kangaroo puts
a small trained **adapter** (here one decoder layer) between the exit and the target's final norm and
LM head. The drafting layers are the target's, shared: only the adapter's weights are new.""")

HOW = _("""1. Run the new tokens through the target's first **exit_layer** layers (its own weights, a KV cache
   of the drafter's own), then the adapter (or nothing, with `adapter=none`).
2. The target's final norm and LM head give q (the adapter scores the 4,096 most frequent answer
   tokens); draw a token, feed it back: a chain of up to **k** tokens (the **draft length rule** decides
   how many, as on the sps page: fixed, the +2/−1 heuristic, a confidence cutoff or the learned stop).
3. One target forward verifies the chain; each token is kept with min(1, p/q), the first rejection
   is resampled from the residual: **lossless**, as speculative sampling.
4. The drafter's cache keeps the accepted tokens; the rejected ones are cropped.""")


def params() -> dict:
    c = st.columns(3)
    k = control("early_exit", "k", c[0])
    adapter = c[1].selectbox("adapter", list(ADAPTERS), format_func=ADAPTERS.get, key="early_exit.adapter",
                             help=_(catalog.method("early_exit").param("adapter").help))  # as ui.controls
    # The shipped adapter was trained on layer 2's states: other depths run without one. The embedded
    # model has 30 layers: the draft keeps at least one for the verifier.
    exit_layer = control("early_exit", "exit_layer", c[2], high=29) if adapter == "none" else 2
    return {"k": k, "exit_layer": exit_layer, "adapter": adapter, **draft_length.controls("early_exit")}


def depth_table() -> None:
    if not STATS.exists():
        st.info(_("No trained adapter yet: `python -m paradec.train early_exit` writes its numbers here."))
        return
    s = json.loads(STATS.read_text())
    header(_("How agreement grows with the exit depth (held-out answer positions)"), FROM_RUN,
           help=_("How often the model's early exit after a given layer agrees with the full model's next token, "
                  "on answers it was not trained on. A deeper exit agrees more but costs more to draft."))
    layers, adapter, agreement = _("layers before the exit"), _("adapter"), _("agreement")
    rows = [{layers: _("{d} of {n}").format(d=d, n=s["layers"]), adapter: "none", agreement: a}
            for d, a in s["plain_exit"].items()]
    rows.insert(1, {layers: _("{d} of {n}").format(d=s["exit_layer"], n=s["layers"]), adapter: _("trained"),
                    agreement: s["after"]})
    st.dataframe(rows, hide_index=True)
    st.caption(_("Agreement = the exit's top token equals the full model's, over the {vocab} most frequent "
                 "answer tokens, at the answer positions of {heldout_rows} held-out rows of the self-distillation "
                 "data (from the adapter's training run, {steps} steps in {seconds} s on {device}).").format(
        vocab=s["vocab"], heldout_rows=s["heldout_rows"], steps=s["steps"], seconds=s["seconds"], device=s["device"]))


NOTICE = (_("The target's own first layers draft: exit early, guess, then verify with the full model."),
          _("No second model to load; the guesses get better the deeper the exit (the table below)."),
          _("Every step ends with one full forward, so the text equals AR's."))
method_page("early_exit", _("Early exit"), INTRO, HOW, params, notice=NOTICE)
with presenter.fold(_("How agreement grows with the exit depth")):
    depth_table()
