"""The replay every method page shows: player, token stream, draft tree, attention mask,
rejection-sampling microscope and step KPIs, all drawn from one recorded or live trace."""
from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from paradec.costs.speccost import chain_tau
from paradec.plots import kpis, microscope
from paradec.plots.mask import mask_figure
from paradec.plots.style import FROM_RUN, MEASURED, MODEL
from paradec.plots.tokens import label
from paradec.plots.tree import tree_figure
from paradec.stage import narrate
from paradec.stage.frames import default_node
from paradec.traces.trace import Trace

from . import player, predict, presenter, stage, vote
from .i18n import N_, _, words
from .style import chart, header

SIM_DRAWS = 1000
ACCEPTANCE_HELP = N_("α = accepted draft tokens / tested draft depths. A depth is tested when the accepted path "
                     "reached the one before it (depth 1: whenever the step drafted): siblings count once, and nodes "
                     "under a rejected one not at all. — when nothing was drafted (AR).")
Panels = Callable[[Trace, int], dict]  # a method's own panels: draw step i, return the figures
NO_EXTRA = stage.NO_EXTRA


def replay(trace: Trace, ns: str, analytic_k: int | None = None, panels: Panels | None = None,
           extra: stage.Extra = NO_EXTRA, notice: tuple[str, ...] = (), shared: Callable[[dict], None] | None = None
           ) -> dict | None:
    """Draw the player and, under it, the details at the player's step; returns the figures shown (for
    export). panels(trace, i) draws the method's own details; extra: its own animated stage panels.
    A trace that replaces another (a live run, an import) gets its player alone, and None: the details follow
    when the browser says it has drawn it. Their charts took the browser twice as long as the player, and it
    drew them first: a live run's trace showed a third of a second later."""
    n, start = len(trace.steps), narrate.lesson(trace) + 1
    asking = predict.on()
    shown = [trace.method, trace.prompt, trace.wall_s, n]
    wait = player.replaces(ns, shown)
    i = player.init(ns, n, start, shown) - 1
    # predict mode highlights its question's node, unless one was picked below
    sel = st.session_state.get(f"{ns}.node.{i}", None if asking else default_node(trace, i))
    show_rejected = st.session_state.get(f"{ns}.rejected", True)
    i = player.show(ns, n, stage.build(trace, ns, show_rejected, extra, i, sel, asking), start, presenter.on(), wait,
                    vote.player_data(ns) if asking else None)
    if asking:
        vote.publish(trace, i)
        vote.tally()
    elif not presenter.on():  # a presenter says it; predict mode does not tell the outcome first
        st.caption(narrate.lesson_note(trace, words()))
    slot = st.container()  # the sharing box, right under the player (filled once the details' figures exist)
    presenter.notice(notice)  # what to notice, under the player and above the details, for every student
    if wait:
        return None
    with presenter.fold(_("This step's details: the drafted tokens' numbers, the microscope, the KPIs")), \
            player.details(ns):
        st.markdown(_("#### Details of step {n}").format(n=i + 1), help=_(
            "Everything below follows the player when it stops (dimmed while it plays). Pick a drafted token to see "
            "its numbers."))
        st.checkbox(_("show this step's rejected draft (struck through) in the stream"), value=True,
                    key=f"{ns}.rejected")
        figs = panels(trace, i) if panels else {}
        sel = _pick_node(trace, i, ns)
        figs.update({"tree": tree_figure(trace, i, sel), "mask": mask_figure(trace, i, sel)})
        figs.update(_microscope(trace, i, sel, ns))
        figs.update(_kpis(trace, i, ns, analytic_k))
    if shared:
        with slot:
            shared(figs)
    return figs


def _pick_node(trace: Trace, i: int, ns: str) -> int | None:
    nodes = trace.steps[i].nodes
    if not nodes:
        return None
    default = default_node(trace, i)
    names = [f"{j}: {label(trace.text_of(n.token))} ({narrate.status(n.status, words())})" for j, n in enumerate(nodes)]
    return st.selectbox(_("Selected draft node (highlighted in the tree, the mask and the microscope)"),
                        range(len(nodes)), index=default, format_func=names.__getitem__, key=f"{ns}.node.{i}")


def _microscope(trace: Trace, i: int, sel: int | None, ns: str) -> dict:
    step = trace.steps[i]
    greedy = trace.sampling.get("temperature", 0) <= 0
    header(_("Rejection-sampling microscope") if not greedy else _("Acceptance microscope (greedy)"), FROM_RUN,
           help=_("The selected draft token's test. Sampling: the target's p beside the draft's q, the accept test "
                  "u < min(1, p/q), and, after a rejection, the residual norm(max(0, p − q)) the replacement is "
                  "drawn from. Greedy: accepted when the token is the target's top choice."))
    node = step.nodes[sel] if sel is not None else None
    if node is None or node.p is None:
        if node is not None:
            st.markdown(narrate.node_story(trace, node, greedy, words()))
        st.caption(_("The target's distribution where this step's last token was drawn:"))
        fig = microscope.residual_figure(trace, step.last_p_top)
        fig.update_layout(title=_("target top-k; drawn: {token}").format(token=label(trace.text_of(step.tokens[-1]))))
        chart(fig, f"{ns}.fig.last")
        return {"target": fig}
    st.markdown(narrate.node_story(trace, node, greedy, words()))
    figs = {"p_vs_q": microscope.pq_figure(trace, node)}
    sampled = not greedy and node.accept_prob is not None  # None: tested without a draw (typical acceptance)
    cols = st.columns([2, 1.2, 2] if sampled else [1])
    with cols[0]:
        chart(figs["p_vs_q"], f"{ns}.fig.pq")
    if not sampled:
        return figs
    figs["accept_test"] = microscope.accept_figure(node)
    with cols[1]:
        chart(figs["accept_test"], f"{ns}.fig.acc")
    last_rejected = node.status == "rejected" and not any(n.status == "rejected" for n in step.nodes[sel + 1:])
    with cols[2]:
        if last_rejected and step.residual_top:
            figs["residual"] = microscope.residual_figure(trace, step.residual_top)
            chart(figs["residual"], f"{ns}.fig.res")
        else:
            st.caption(_("The residual appears when the selected token is rejected."))
    figs.update(_simulate(trace, i, sel, node, ns))
    return figs


def _simulate(trace: Trace, i: int, sel: int, node, ns: str) -> dict:
    flag = f"{ns}.sim.{i}.{sel}"
    if st.button(_("Sample this step {n:,} times").format(n=SIM_DRAWS), key=f"{ns}.simbtn.{i}.{sel}"):
        st.session_state[flag] = True
    if not st.session_state.get(flag):
        return {}
    header(_("{n:,} draws of the accept / resample rule").format(n=SIM_DRAWS), FROM_RUN,
           help=_("The accept / resample rule run many times on this step's p and q: the tokens it outputs land on "
                  "the target's p (purple), not on the draft's q. That is why speculative sampling is lossless."))
    seed = (trace.sampling.get("seed", 0) * 100_003 + i * 101 + sel) % 2**63  # numpy takes no negative seed
    fig = microscope.histogram_figure(trace, node, SIM_DRAWS, seed)
    chart(fig, f"{ns}.fig.sim")
    st.caption(_("Real numpy draws (seeded) of: x ~ q; keep x with probability min(1, p/q); else draw from "
                 "norm(max(0, p − q)). It uses the p and q the trace recorded on the tokens either top-k names; the "
                 "rest of the vocabulary is pooled in one 'other' bucket. The purple bars land on p, not on q."))
    return {"simulation": fig}


def _kpis(trace: Trace, i: int, ns: str, analytic_k: int | None) -> dict:
    step = trace.steps[i]
    header(_("Step KPIs"), FROM_RUN, MEASURED, *([MODEL] if analytic_k else []),
           help=_("This step in numbers: tokens committed, τ so far, the run's acceptance α and the measured draft "
                  "and verify times of this step."))
    c = [*st.columns(3), *st.columns(3)]  # two rows of three: no label is cut on a 1024-px screen
    c[0].metric(_("tokens this step"), len(step.tokens), help=_("accepted drafts + the target's own token"))
    c[1].metric(_("running τ"), f"{kpis.running_tau(trace, i):.2f}",
                help=_("tokens per target forward so far, bonus included (AR = 1.00)"))
    alpha = trace.acceptance
    c[2].metric(_("acceptance (run)"), "—" if alpha is None else f"{alpha:.0%}", help=_(ACCEPTANCE_HELP))
    c[3].metric(_("draft / verify ms"), f"{step.draft_ms:.0f} / {step.verify_ms:.0f}", help=_("MEASURED in this run"))
    if analytic_k and alpha is not None:
        c[4].metric(_("τ if i.i.d. (MODEL)"), f"{chain_tau(alpha, analytic_k):.2f}",
                    help=_("(1 − α^(k+1)) / (1 − α) with the run's α = {alpha:.2f}, k = {k} (Leviathan et al.): the "
                           "run's τ when its acceptances are i.i.d. and every step drafts k").format(alpha=alpha,
                                                                                                  k=analytic_k))
    figs = {"tokens": kpis.tokens_figure(trace, i), "positions": kpis.position_figure(trace),
            "time": kpis.time_figure(trace, i)}
    for col, (name, fig) in zip(st.columns(3), figs.items()):
        with col:
            chart(fig, f"{ns}.fig.{name}")
    return figs
