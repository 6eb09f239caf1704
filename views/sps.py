import streamlit as st

from paradec import catalog
from paradec.traces.trace import Trace
from ui import draft_length, figures, presenter
from ui.controls import control
from ui.i18n import _
from ui.page import method_page
from ui.presets import DEFAULT_DRAFT

K = catalog.method("sps").defaults()["k"]
INTRO = _("""A small draft model **q** proposes *k* tokens; the target **p** checks them all in **one**
forward pass, keeps the longest prefix it agrees with (under sampling: each with probability
min(1, p/q), resampling from the residual at the first rejection) and adds one token of its own.
Leviathan et al. 2023; Chen et al. 2023. Here the draft is small and its training data modest, so on this
CPU sps runs at {speedup} AR's speed over the Benchmark page's {prompts}
prompts (`{bench_file}`): every mechanism shown is real (the numbers below say why).""").format(
    speedup=figures.bench("sps", "speedup"), prompts=figures.bench_prompts(), bench_file=figures.BENCH_FILE)

STATS = figures.drafter("sps-smollm2")
DRAFT_MS, VERIFY_MS = figures.step_ms("sps-greedy")
DRAFT = _(""":green-badge[Trained draft] The default draft (`{default_draft}`) is {layers} Llama decoder layer(s)
of the target's width, distilled from the target's own answers (`assets/drafters/sps-smollm2/card.md`). It
reads the target's embeddings and scores only the {vocab} tokens the target writes most often, with
those rows of the target's LM head: in the recorded run a drafted token took {draft_ms} ms against {verify_ms} ms
for a verify pass. q is zero outside those tokens, which keeps rejection sampling exact.

:orange-badge[Modest draft] It learned from {answer_tokens} answer tokens (the target's own answers): on held-out
rows its greedy token is the target's {alpha} of the time ({baseline} for the previous draft). On the rows of
greedy answers it learned from it agrees {train} of the time, against {held} on held-out ones: new prompts
could still move it (`assets/drafters/sps-smollm2/stats.json`). A verify pass over
{tokens} tokens costs {cost} one-token passes on paradec's CPU forward
(`assets/traces/forward_cost.json`), so with τ {tau} sps runs
**{speedup} AR** in the benchmark: every mechanism shown is real, the draft is just not good
enough yet. For contrast, type `self:N`: the
target's own first N layers with its full LM head, never trained as a draft: low acceptance at a cost close
to the target's.""").format(
    default_draft=DEFAULT_DRAFT, layers=STATS.get("layers", figures.MISSING), vocab=STATS.get("vocab", "?"),
    draft_ms=DRAFT_MS, verify_ms=VERIFY_MS, answer_tokens=figures.thousands(STATS.get("answer_tokens")),
    alpha=figures.share(STATS.get("after", {}).get("alpha")),
    baseline=figures.share(STATS.get("baseline", {}).get("alpha")),
    train=figures.share(STATS.get("agreement_gap", {}).get("greedy_training_rows")),
    held=figures.share(STATS.get("agreement_gap", {}).get("greedy_heldout_rows")),
    tokens=K + 1, cost=figures.pass_cost(K + 1), tau=figures.bench("sps", "tau"),
    speedup=figures.bench("sps", "speedup"))

HOW = _("""1. **Propose**: the draft runs *k* forward passes, sampling token *i* from q_i (greedy: argmax).
2. **Verify**: the target runs ONE forward pass over the pending token and the *k* drafts. The
   attention mask lets each draft token see the context and the drafts before it, so the pass gives
   p at every position at once.
3. **Accept**: walk the chain. Keep token *i* if u < min(1, p/q) (greedy: if it is p's argmax).
   At the first rejection, draw from norm(max(0, p − q)) instead and stop.
4. **Bonus**: if all *k* pass, the target's distribution after the last draft gives one more token
   for free. So one target forward commits between 1 and *k* + 1 tokens: that count is **τ**.""")

RULES = _("""**fixed** drafts k tokens every step. **heuristic** grows k by 2 after a fully accepted draft and
shrinks it by 1 after a rejection. **confidence** stops once the draft's top probability falls below the
threshold. Every extra token costs a draft pass and a wider verify pass; it pays only if it is accepted.""")


def params() -> dict:
    c = st.columns(3)
    return {"k": control("sps", "k", c[0]), **draft_length.controls("sps", c[1:])}


def draft() -> str:
    return st.text_input(_("Draft model: trained, self:N (first N target layers), a hub id or a local folder"),
                         DEFAULT_DRAFT, key="sps.draft").strip() or DEFAULT_DRAFT


def analytic_k(trace: Trace) -> int | None:
    """The i.i.d. formula needs a fixed draft length."""
    p = trace.params or {}
    return p.get("k") if p.get("draft_length", "fixed") == "fixed" else None


NOTICE = (_("A small draft model proposes a few tokens; the target checks them all in one forward pass."),
          _("Green: accepted; red: rejected. At the first rejection the target's own token takes its place."),
          _("The microscope: a token is kept with probability min(1, p/q), so the output follows the target's p."))
method_page("sps", _("Speculative sampling with a draft model"), INTRO, HOW, params, draft, analytic_k, more=DRAFT,
            notice=NOTICE)
with presenter.fold(_("How long should a draft be? Four rules compared")):
    draft_length.compare("sps", RULES)
