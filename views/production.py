import streamlit as st

from ui import production
from ui.i18n import _

st.title(_("Production engine: the same methods on vLLM or SGLang"))
st.markdown(_("""paradec shows every step of a method on a small model; vLLM and SGLang run the same methods
on 8-70B models and report only counters. Here the same prompts go through an engine and through paradec's
matching method (vLLM's `eagle3` is paradec's `eagle3`, `ngram` is `pld`, `draft_model` is `sps`), side by side."""))

with st.expander(_("What each engine counts, and what it does not"), expanded=True):
    st.markdown(_("""**τ is one number everywhere here**: tokens committed per target forward, the bonus token
included. vLLM calls it the *mean acceptance length*, 1 + accepted ÷ drafts over its verify steps, and SGLang's
`avg_spec_accept_length` is the same ratio. One difference of bookkeeping: the engines leave out the prefill
forward, which drafts nothing, while paradec's first step is the prefill and already verifies drafts.

- **vLLM, per request** (`--per-request-spec-decode-metrics summary|detailed`): each answer's verify steps,
  drafted and accepted tokens and a histogram of drafts accepted per step; *detailed* adds every step's accepted
  and drafted counts, in order: the coarse step trace replayed below.
- **vLLM, Prometheus** (`/metrics`): `vllm:spec_decode_num_drafts`, `…_num_draft_tokens`,
  `…_num_accepted_tokens` and `…_num_accepted_tokens_per_pos` (by position), summed over every request since
  the server started. paradec reads them before and after its own requests and keeps the difference; another
  client's requests in between would be counted too.
- **SGLang** (`/get_server_info`): `avg_spec_accept_length` alone, **cumulative over the server's whole life**.

**What no engine reports**: the tree (which candidates were drafted, which branch won), the drafted tokens
and any per-token p or q, so there is no tree, mask or microscope here: per step, only how many tokens were
drafted and how many accepted. Acceptance at position *i* is the share of drafts whose accepted prefix reached
*i* (vLLM: accepted at position *i* ÷ drafts), counted alike for both. The table's **acceptance α** is accepted
drafts ÷ tested ones (position *i* is tested when the prefix reached *i* − 1), paradec's one definition; from an
engine's counts it is exact when every draft drafted every position, or from vLLM's per-step arrays.

**Speedup** divides the engine's tokens/s by its baseline URL's (the same model served without speculation,
the same prompts, one request at a time, timed by this client: network and prefill included), and paradec's
by its own AR's. Each is a ratio within one machine; do not divide one machine's tokens/s by the other's.
The engine gets the prompt as plain text (`/v1/completions`), paradec with the model's chat template."""))

report = production.pick()
if report:
    production.show(report)
st.divider()
production.live_run()
