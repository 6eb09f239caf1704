"""The article, checked: each claim of the article the app teaches, what paradec measured for it (paradec.claims
reads the figures from the shipped runs), a verdict and the view that shows it. The claims are paraphrased."""
from __future__ import annotations

import streamlit as st

from paradec import claims

from .i18n import N_, _
from .sources import TRACE_DIR

ASSETS = TRACE_DIR.parent

VERDICT = {"supported": (N_("supported"), "green"), "partly": (N_("partly supported"), "orange"),
           "different": (N_("different here"), "red"), "not measurable": (N_("not measurable here"), "gray")}

# key -> (what the article claims, what paradec measured (a template of the check's values), why / what would change it)
TEXT = {
    "verify_eight": (
        N_("Verifying 8 draft tokens in one pass costs about as much as generating one token."),
        N_("A pass of 8 tokens costs **{ratio:.2f}×** a 1-token pass on paradec's CPU forward "
           "(Hugging Face's forward: {hf:.2f}×)."),
        N_("A decode pass is memory-bound: it reads every weight once whatever the number of tokens it carries. "
           "How flat the curve stays depends on the engine: a generic forward pays per-call costs that a lean one "
           "does not.")),
    "intensity": (
        N_("Decoding sits at about 1 FLOP per byte, two orders of magnitude below a GPU's ridge point."),
        N_("A one-token pass in bfloat16: **{bf16_8b:.2f} FLOP/byte** for Llama-3.1-8B, {bf16_small:.2f} for "
           "SmolLM2-135M ({fp32_small:.2f} in float32). Ridge points: {ridge_gpu:.0f} FLOP/byte on an H100 "
           "(bfloat16), {ridge_cpu:.2f} on the recording CPU (float32, probed)."),
        N_("Analytic (the roofline model): every weight is read once and used for one multiply-add per token. On "
           "a GPU the gap to the ridge is what speculation fills; this CPU's ridge is much lower, so fewer extra "
           "tokens are free here.")),
    "sps_speedup": (
        N_("Speculative decoding typically gives 2-3× depending on the acceptance rate."),
        N_("Speculative sampling here: **{speedup:.2f}×** AR at τ {tau:.2f}; the fastest method, {best}, "
           "{best_speedup:.2f}×. The draft model is {draft_share:.0%} of the target's weights."),
        N_("The 2-3× is for a 7B-70B target on a GPU, where a draft costs about 1% of a target pass and a "
           "well-aligned draft reaches τ 3-4. Here the target has 135M parameters, so the draft is "
           "{draft_share:.0%} of its weights, and a tiny draft agrees less often: τ {tau:.2f}. A larger target, a "
           "GPU or a better-aligned draft each raise the figure.")),  # not measured: the article's GPU setting
    "lookahead_speedup": (
        N_("Lookahead decoding typically gives 1.5-2×."),
        N_("Lookahead here: **{speedup:.2f}×** AR at τ {tau:.2f}."),
        N_("Lookahead's window and n-gram pool ride along in every pass: free on a GPU with compute to spare, "
           "not on a 2-core CPU whose ridge point is a few tokens. Its pool also finds fewer n-grams in a "
           "135M model's short answers.")),
    "by_task": (
        N_("Code and formulaic text accept more draft tokens than creative text."),
        N_("{method} τ by prompt category: highest **{top}** ({top_tau:.2f}), lowest **{last}** ({last_tau:.2f}); "
           "coding ranks {coding_rank} of {categories} ({coding_tau:.2f})."),
        N_("Creative writing is indeed the least predictable. Code ranks low here because the drafters were "
           "trained on this model's own answers to general prompts, few of them code; a drafter trained on code "
           "would move it up.")),
    "lossless": (
        N_("Rejection sampling makes speculative decoding lossless: the output is exactly the target's."),
        N_("Greedy, float32: **{identical} of {runs}** runs of {methods} methods gave exactly AR's tokens; "
           "sampled runs pass statistical tests of the target's distribution."),
        N_("Exact in float32. In bfloat16 a verify pass can round differently from a one-token pass, so a "
           "near-tie may flip (the Numerics page measures it).")),
    "medusa_quality": (
        N_("Medusa does not keep the target's quality; Medusa-2 fixes it with stricter verification."),
        N_("Medusa with exact verification: **{identical} of {runs}** runs identical to AR."),
        N_("The other way round here: Medusa's heads only propose; the target verifies them exactly, so Medusa-1 "
           "is lossless. Medusa-2's *typical acceptance* trades exactness for speed: it is the lossy option "
           "(labelled so on the Medusa page).")),
    "tree_dozens": (
        N_("A tree of depth 4 and branching 3 verifies dozens of continuations in one pass."),
        N_("The recorded 63-node tree: **{leaves} continuations** (leaves) of depth {depth} in one pass; "
           "a pass of {rows} tokens costs {cost:.2f}× a 1-token pass here; τ {tau:.2f}."),
        N_("One pass checks every branch, but on this CPU a wide pass is not free: past the ridge point each "
           "extra row costs time. On a GPU, with compute to spare, 64 rows cost little more than one.")),
    "eagle3_best": (
        N_("EAGLE-3 reaches the best acceptance among single-model methods."),
        N_("EAGLE-3: **τ {tau:.2f}**, the highest of the single-model methods here (next: {runner}, "
           "{runner_tau:.2f})."),
        N_("On the bench's held-out prompts, with paradec's own trained heads.")),
    "jacobi_prefix": (
        N_("Plain Jacobi decoding works poorly because models are trained on exact prefixes; consistency "
           "training (CLLM) helps."),
        N_("Jacobi: **τ {jacobi_tau:.2f}** tokens per pass; after consistency training (CLLM): τ {cllm_tau:.2f}."),
        N_("With wrong guesses before it, a position is rarely predicted right, so about one token settles per "
           "pass. CLLM's gain here is small: trained on 64 prompts only.")),
    "draft_length": (
        N_("Choosing the draft length dynamically (Pacer) and exiting early on confidence (Kangaroo) automate "
           "the tuning."),
        N_("Speculative sampling, τ by draft-length rule: fixed {fixed_tau:.2f} ({fixed_drafts} draft passes), "
           "learned {learned_tau:.2f} ({learned_drafts}), confidence {confidence_tau:.2f} ({confidence_drafts}); "
           "early exit (the target's own first layers draft): τ {exit_tau:.2f}."),
        N_("The dynamic rules keep τ with far fewer draft passes, which is where they save time; paradec's "
           "learned rule is a small model like Pacer's, not Pacer itself.")),
    "mirror": (
        N_("Mirror speculative decoding runs draft and target in parallel on a GPU and an NPU."),
        N_("Drafting while verifying on one CPU: **{speedup:.2f}×** AR (speculative sampling in turn: {sps:.2f}×)."),
        N_("No GPU or NPU here: both models share the same cores, so running them at once slows each down. "
           "The measurement shows the overlap's cost, not Mirror-SD's gain.")),
    "deft": (
        N_("DeFT makes tree attention efficient on NVIDIA GPUs."),
        N_("Not run: the Medusa page models the KV-cache reads of one tree pass per-branch, with a naive mask and "
           "DeFT's grouping (analytic)."),
        N_("DeFT is a GPU kernel; this machine has no GPU, and a CPU's caches change what a kernel reads.")),
    "memory": (
        N_("Speculative decoding needs memory for a draft model; Medusa and EAGLE add modest parameters; trees "
           "need a larger KV cache."),
        N_("Weights beside the target's: draft model {draft:.1%}, EAGLE-3 head {heads:.1%}, Medusa heads "
           "{medusa:.1%}; EAGLE-3's KV cache {kv:.2f}× AR's."),
        N_("Measured per method in the bench run.")),
}


def show(check: claims.Check) -> None:
    """One claim in a box: the claim, the measurement, the verdict, why, the run it comes from and its view."""
    claim, found, why = TEXT[check.key]
    label, color = VERDICT[check.verdict]
    with st.container(border=True):
        st.markdown(f"**{_(claim)}** :{color}-badge[{_(label)}]")
        st.markdown(_(found).format(**check.values))
        st.caption(_(why).format(**check.values))
        runs = "; ".join(f"`assets/{s}` ({claims.run_of(ASSETS, s)})" for s in check.sources)
        if runs:
            st.caption(_("Figures read from {runs}.").format(runs=runs))
        st.page_link(f"views/{check.view}.py", label=_("See it in the app"), icon=":material/arrow_forward:")
