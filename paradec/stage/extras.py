"""Each method page's own animated panels, beside the tree, the mask and the stream every page has: EAGLE's growing
tree, Medusa's heads, Jacobi's convergence grid, Lookahead's window and pool. The app's pages (views/) and the static
site's take them from here, by page (EXTRAS), so both animate the same panels."""
from __future__ import annotations

from collections.abc import Callable

from ..plots import eagle
from ..plots.jacobi import committed_figure, grid_figure
from ..plots.lookahead import pool_html, window_figure
from ..plots.lookahead import winner as pool_winner
from ..plots.medusa import heads_figure, winner
from ..plots.tokens import label
from ..traces.trace import Trace
from ..words import N_, Words
from .frames import NO_EXTRA, Extra, Panel

GROWTH = Panel("growth", N_("The draft tree, reranked"), N_("Every candidate the head drafted this step, by depth: "
               "the rerank keeps the most confident ones (the tree the target verifies) and cuts the rest."),
               caption=N_("Marker size = cumulative confidence (the product of q along the path); green = accepted "
                          "path, x = cut. Pause to grow it depth by depth below."))
EAGLE = Extra([[GROWTH]], lambda t, i: {"growth": eagle.growth_spec(t, i)})


def won_line(trace: Trace, i: int, tr: Words) -> str:
    """Medusa's step: the path of head ranks the target kept."""
    won = winner(trace, i)
    return (tr("Path that won: `{path}` ({n} guesses accepted).").format(path=won, n=len(won)) if won else
            (tr("First step: nothing drafted, the prefill makes the first hidden state.") if not trace.steps[i].nodes
             else tr("No guess was accepted: the target's own token only.")))


HEADS = Panel("heads", N_("The tree built from the heads (head × top-k rank)"), N_("Row k is head k's guesses for "
              "the token k places ahead, best first. The tree takes some of these cells; the target keeps one path of "
              "them."), caption=N_("Each cell: a head's rank-r guess and its head probability. Outlined: the cells "
                                   "the tree uses; green: the path that won."))
MEDUSA = Extra([[HEADS]], lambda t, i: {"heads": heads_figure(t, i)}, won_line)

GRID = [Panel("convergence", N_("Convergence grid"), N_("Each row is one Jacobi iteration (one forward pass) of the "
                                                        "block; read down a column to see one position's guess "
                                                        "change until it settles."), 2.2,
              caption=N_("Rows: iterations (newest at the bottom, the current one outlined). Orange: the guess "
                         "changed since the last iteration; blue: stable but not yet committed; green: committed (the "
                         "fixed prefix and the target's own token after it). The block slides right by what it "
                         "committed. A cell shows what fits of its token; hover it for the whole token.")),
        Panel("committed", N_("Tokens per forward"), N_("How many tokens each iteration committed: one is AR's pace; "
                                                        "more means several guesses reached their fixed point in one "
                                                        "pass."))]
JACOBI = Extra([GRID], lambda t, i: {"convergence": grid_figure(t, i), "committed": committed_figure(t, i)})


def pool_story(trace: Trace, i: int, tr: Words) -> str:
    """Lookahead's step: what the pool offered, which candidate won, what the window added."""
    rec = trace.steps[i].record
    cands = rec.candidates
    best, n_won = pool_winner(trace, i)
    added = len(rec.added)
    if not cands:
        return tr("The pool had no n-gram starting with the pending token: only the window rode along. "
                  "The window then added {added} n-grams to the pool.").format(added=added)
    if best is None:
        return tr("The pool offered {n} candidate(s); the target rejected the first token of each. "
                  "The window then added {added} n-grams to the pool.").format(n=len(cands), added=added)
    won = " ".join(f"`{label(trace.text_of(t))}`" for t in cands[best][:n_won])
    return tr("The pool offered {n} candidate(s); candidate {best} won: {won}. "
              "The window then added {added} n-grams to the pool.").format(
        n=len(cands), best=best + 1, won=won, added=added)


def lookahead(trace: Trace) -> Extra:
    """Lookahead's window and pool, titled with the run's own sizes."""
    p = trace.params
    window = Panel("window", N_("2D window: N = {n} rows × W = {w} columns"),
                   N_("The Jacobi trajectories that ride along in the verify pass; each column, read downwards, "
                      "closes one n-gram for the pool."), 1.2,
                   caption=N_("Levels 0..N−2 were fed in this pass (dark: the pending token); the last row is what "
                              "the target predicted after the last level. Solid outline = new to the pool, dotted = "
                              "already there."), values=(("n", p.get("ngram")), ("w", p.get("window"))))
    pool = Panel("pool", N_("n-gram pool (searched with the pending token, G = {g})"),
                 N_("The n-grams collected so far, by first token. The row of the pending token is what this step "
                    "verifies; green tokens were accepted."), html=True,
                 caption=N_("Rebuilt from the trace by replaying every step's n-grams: per first token, the newest G "
                            "continuations."), values=(("g", p.get("candidates")),))
    return Extra([[window, pool]], lambda t, i: {"window": window_figure(t, i), "pool": pool_html(t, i)}, pool_story)


EXTRAS: dict[str, Extra | Callable[[Trace], Extra]] = {"eagle": EAGLE, "medusa": MEDUSA, "jacobi": JACOBI,
                                                       "lookahead": lookahead}  # by page


def for_page(page: str, trace: Trace) -> Extra:
    """A page's own panels for this trace (none: NO_EXTRA)."""
    extra = EXTRAS.get(page, NO_EXTRA)
    return extra(trace) if callable(extra) else extra
