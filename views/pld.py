from ui.controls import controls
from ui.i18n import _
from ui.page import method_page

INTRO = _("""**Prompt lookup decoding** drafts with no model at all: it finds the last few generated
tokens (an n-gram) earlier in the prompt or output and proposes what followed them there. It
shines when the answer copies the prompt (editing, extraction, code changes) and costs
nothing when it finds no match.""")

HOW = _("""1. Take the last *n* committed tokens (longest n-gram first, `ngram_max` down to `ngram_min`).
2. Find their latest earlier occurrence; propose the next *k* tokens after it as a chain.
3. The target verifies the chain in one forward pass. The proposal is deterministic, so its
   q is one-hot: greedy keeps a token when it is the target's argmax, sampling keeps it with
   probability p(token).
4. The first mismatch ends the step; the target's own token follows (resampled or bonus).""")


def params() -> dict:
    return controls("pld", ["k", "ngram_max", "ngram_min"])


NOTICE = (_("No draft model: the draft is copied from where the last n-gram already appeared in the prompt."),
          _("It wins when the answer repeats the prompt (summaries, edits, extraction), not on open writing."),
          _("A step without a match is one plain forward, like AR: nothing is lost but the lookup."))
method_page("pld", _("Prompt lookup decoding"), INTRO, HOW, params, notice=NOTICE)
