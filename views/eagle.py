import streamlit as st

from paradec import catalog
from paradec.stage.extras import EAGLE
from ui import draft_length, eagle, figures, presenter, sources
from ui.controls import controls
from ui.i18n import _
from ui.page import method_page

TITLE = _("EAGLE-1/2/3: drafting at the feature level")
# The presets of paradec.drafters.eagle.TREES, named here because a page never imports the drafters
# (they load torch); tests/test_eagle_page.py keeps the two in step.
TREES = ["cpu10", "chain4"]

INTRO = _("""**EAGLE** (Li et al., 2024) drafts with a one-layer **head** that works on the target's
**features** (hidden states) instead of its tokens: it reads the feature at one position with the
embedding of the token that came next, predicts the following feature, and the target's own LM head
turns that into a draft distribution q. Features are easier to extrapolate than tokens, and feeding
the token resolves which branch the feature belongs to. The head drafts a **tree**, verified in one
target forward with a tree attention mask.""")

VERSION_TEXT = {
    "eagle": _("""**EAGLE-1** grows a **static tree**: fixed rank paths (`cpu10`: 10 nodes, sized for this CPU's
verify pass), every candidate verified."""),
    "eagle2": _("""**EAGLE-2** makes the tree **dynamic**, because the draft's confidence predicts acceptance: at each
depth the **top_k** most confident candidates (the product of q along their path) are expanded, then every
candidate drafted is **reranked** and the best **total_tokens** are verified. Same head as EAGLE-1."""),
    "eagle3": _("""**EAGLE-3** feeds the head a **fusion of low, middle and high layers** of the target instead of the
last one, trains it with **training-time test** (the head learns from its own drafted features, as it
runs, so errors do not pile up along a path) and drafts over a **reduced vocabulary** (the tokens the
target writes most often) to keep its output layer cheap; EAGLE-2's dynamic tree. Here it also verifies a
**prompt-lookup branch** beside the tree (`lookup`, on by default): what followed the last n-gram's earlier
occurrence, copied, so a step keeps whichever branch the target accepts further (an addition of paradec's,
not the paper's; set `lookup` to 0 for EAGLE-3 alone)."""),
}

HOW = _("""1. After each verify pass the target has given the features of the pending token and of every
   accepted one: the head takes these (feature, next token) pairs into its own KV cache.
2. From the last entry it predicts the next feature; the LM head gives q, whose top-k are the depth-1 candidates.
3. **Expand**: a candidate goes back into the head as (its parent's predicted feature, its token) to get its
   children: one head pass per depth for all expanded candidates (a tree mask inside the head too).
   EAGLE-1: the static tree says which. EAGLE-2/3: the **top_k** of the newest depth by cumulative
   confidence (score = Σ log q along the path).
4. **Rerank** (EAGLE-2/3): every candidate sorted by score, the best **total_tokens** kept. A child never
   scores above its parent, so what is kept is a tree.
5. **One target forward** over the pending token and the kept nodes. Accept the longest path the target
   agrees with (greedy: its argmax; sampling: siblings in rank order, each accepted with its target
   probability, else removed from p and the next tried, which keeps the target's distribution), plus the
   target's own next token.
6. The first step drafts nothing: the features exist only after the prefill.""")

COST = _("""**On this CPU the head's cost against the verify pass decides the speedup.** A step costs the
head's passes (one over the newly accepted tokens, then one per depth that is expanded) and one verify
pass over 1 + total_tokens tokens. On a GPU that pass costs about as much as a one-token one and the
head is a small fraction of the target, so τ turns into speed almost directly. Here a pass over 8 tokens
costs {cost8} one-token passes and one over 16 {cost16} (the Roofline page's measured
curve, `assets/traces/forward_cost.json`), and every
head pass (with its output layer over the draft vocabulary) adds to it: τ must beat the step's cost in AR
steps before anything is gained. Smaller depth and total_tokens make a step cheaper, and lower τ. The heads
are trained for the embedded model by self-distillation on {tokens} tokens of the target's own answers; on
held-out prompts the EAGLE-3 head's first guess is the target's next token {agree} of the time. On the very rows
it learned from it does not do much better (its model card): one layer cannot fit the target's 30 (model cards in
`assets/drafters/eagle-smollm2` and `eagle3-smollm2`).""").format(
    cost8=figures.pass_cost(8), cost16=figures.pass_cost(16),
    tokens=figures.thousands(figures.drafter("eagle3-smollm2").get("answer_tokens")),
    agree=figures.share((figures.drafter("eagle3-smollm2").get("after") or [None])[0]))


RULES = _("""Here a step's draft length is the tree's **depth**: before growing each depth, the rule is asked
along the **most likely branch** so far (the candidate with the best cumulative score), with the q each of
its tokens was picked from. **fixed** grows every depth (`depth`), as EAGLE does. **heuristic** grows the
depth by 2 after the accepted path reached the drafted depth and shrinks it by 1 otherwise. **confidence**
stops once that branch's newest q has a top probability below the threshold. Every depth not grown saves
a head pass; the verify pass still takes the best **total_tokens**, now from a shallower, wider tree
(EAGLE-1's static tree is cut at that depth instead, and its verify pass shrinks).""")


def version() -> str:
    names = list(eagle.VERSIONS)
    wanted = st.query_params.get("version")
    pick = st.radio(_("Version"), names, index=names.index(wanted) if wanted in names else 2, horizontal=True,
                    format_func=eagle.VERSIONS.get, key="eagle.version", label_visibility="collapsed")
    st.query_params["version"] = pick
    return pick


def params(method: str) -> dict:
    if method == "eagle":
        c = st.columns(3)
        tree_param = catalog.method("eagle").param("tree")  # label and help translated as ui.controls does
        tree = c[0].selectbox(_(tree_param.label), TREES, key="eagle.tree",
                              help=_(tree_param.help))  # the presets of a free-form value
        return {"tree": tree, **draft_length.controls(method, c[1:])}
    return {**controls(method, ["depth", "top_k", "total_tokens", "lookup"]),
            **draft_length.controls(method)}


st.title(TITLE)
method = version()
NOTICE = (_("A one-layer head drafts from the target's features (hidden states), then the target verifies."),
          _("EAGLE-2/3 grow the most confident branches and rerank: watch which candidates are cut."),
          _("Acceptance per depth says how deep the tree pays; τ counts tokens per target forward, bonus included."))
method_page(method, "", INTRO + "\n\n" + VERSION_TEXT[method], HOW, lambda: params(method), panels=eagle.panels,
            extra=EAGLE, more=COST, notice=NOTICE)
ar = sources.recorded("ar").get("greedy")
with presenter.fold(_("EAGLE-1, 2 and 3 compared")):
    eagle.compare(sources.load(ar) if ar else None)
with presenter.fold(_("How deep should the tree grow? Four rules compared")):
    draft_length.compare("eagle3", RULES, unit="depths")
