import json
from fractions import Fraction

import streamlit as st

from paradec.core.tree import MEDUSA_TREES, parse_paths
from paradec.plots.medusa import head_acceptance_figure, heads_figure, node_rows
from paradec.plots.style import FROM_RUN, MEASURED
from paradec.stage.extras import MEDUSA
from paradec.traces.trace import Trace
from ui import draft_length, sizing, sources
from ui.controls import control
from ui.i18n import N_, _, labelled
from ui.page import method_page
from ui.style import chart, header

INTRO = _("""**Medusa** (Cai et al., 2024) needs no draft model: K small **heads** sit on the target's last
hidden state, and head *k* guesses the token *k* places after the next one. Their top-k guesses are
combined into a sparse **tree** (given as a list of paths, Medusa's `medusa_choices`), which the
target verifies in one forward pass with a tree attention mask. The heads here are Medusa-1 heads
trained for the embedded model with the target frozen (see `assets/drafters/medusa-smollm2/card.md`).
Medusa descends from **blockwise parallel decoding** (Stern et al. 2018), whose extra heads proposed a block
of tokens verified as a chain.""")

HOW = _("""1. After each verify pass, keep the target's hidden state h at the last accepted position.
2. Each head is a residual block, h + SiLU(W h + b), feeding the target's own LM head (here restricted
   to the 4096 tokens most frequent in the target's answers: scoring all 49,152 four times a step would
   cost most of a target forward on a CPU). Head *k* on h guesses position pending + *k*.
3. Build the tree: a path [r1, r2] is head 1's rank-r1 token followed by head 2's rank-r2 token.
   The **draft length rule** may keep only its first depths this step (fixed: all; heuristic: +2/−1;
   confidence and learned: asked along the top path, each head's q).
4. **One forward** over the pending token and every node (the tree mask: each node sees its ancestors).
5. **Accept** the longest path the target agrees with (greedy: argmax match, exact; sampling: each child
   in rank order is accepted with its target probability, else removed from p and the next tried,
   which is lossless like Medusa's match-based sampling), plus the target's own next token.
   Medusa-2's **typical acceptance** (accept when p(token) > min(ε, δ·exp(−H(p)))) is faster but LOSSY.
6. The first step drafts nothing: the prompt's last hidden state only exists after the prefill.""")

def tree_size_text() -> str:
    """Why the default tree is small, with the recorded verify-pass costs (forward_cost.json) when shipped."""
    cost, shown = sources.forward_cost(), ""
    if cost:
        ms = dict(zip(cost["tokens"], cost["curves"]["paradec"]["median_ms"]))
        sizes = [n for n in (1, 4, 6, 8, 12, 16, 24) if n in ms]
        shown = " " + _("(measured, {threads} threads: {ms} ms for {sizes} tokens; the Roofline page has the "
                        "curve)").format(threads=cost["threads"], ms=" / ".join(f"{ms[n]:.0f}" for n in sizes),
                                         sizes=" / ".join(map(str, sizes)))
    return _("A verify pass costs little more than a one-token pass for a few tokens and grows after that{shown}, "
             "so a tree pays only while its extra nodes raise τ faster than they raise the pass time: the default "
             "tree was grown from the heads' measured top-k accuracy and sized for this cost curve (the model card "
             "has the table). Medusa's own 63-node tree (`mc_sim_7b_63`) is meant for GPUs, where the pass is "
             "nearly free.").format(shown=shown)


def more_data(points: list[dict]) -> None:
    """Medusa's learning curve (two points or more): the shipped recipe on shares of the training prompts, scored on
    the same kept-out positions."""
    st.markdown(_("Would more training data raise τ? The shipped heads' recipe was trained again on the first "
                  "share of the training prompts and scored on the same kept-out positions: head 1's top-1 is "
                  "measured, the default tree's expected τ is derived from the heads' accuracies "
                  "(`{file}`).").format(file="assets/drafters/medusa-smollm2/learning_curve.json"))
    names = {"prompts": _("training prompts"), "positions": _("training positions"), "top1": _("head 1's top-1"),
             "tau": _("expected τ")}
    st.dataframe([{names["prompts"]: _("all") if p["train_fraction"] == 1 else
                   str(Fraction(p["train_fraction"]).limit_denominator(64)), names["positions"]: p["train_positions"],
                   names["top1"]: p["top1_by_head"][0], names["tau"]: p["expected_tau_shipped_tree"]} for p in points],
                 hide_index=True)
    tau = [p["expected_tau_shipped_tree"] for p in points]
    st.caption(_("From the first share to the second the expected τ grew by {first:.3f}, from the last but one to "
                 "all the prompts by {last:.3f}: more data helps these heads a little, and less each time. Their "
                 "accuracy, not the data, keeps Medusa's τ low on a 135M target.").format(
        first=tau[1] - tau[0], last=tau[-1] - tau[-2]))

HEADS_DEFAULT = N_("the heads' default")  # the option's value (and a table's): shown with _(HEADS_DEFAULT)


def tree_editor() -> str:
    """A preset, then paths removed or added: the tree as JSON ("" = the heads' default)."""
    names = [HEADS_DEFAULT, *MEDUSA_TREES]
    sized = sizing.defaults("medusa")["tree"] or HEADS_DEFAULT  # a GPU opens on a GPU-sized tree
    preset = st.selectbox(_("Tree preset"), names, index=names.index(sized), key="medusa.preset",
                          format_func=labelled({HEADS_DEFAULT: HEADS_DEFAULT}))
    base = MEDUSA_TREES.get(preset, [])
    typed = st.text_input(_("Add paths (JSON, e.g. [[3], [0, 2]])"), key="medusa.add", placeholder="[[3], [0, 2]]")
    try:
        extra = parse_paths(typed) if typed.strip() else []  # the one parser of trees: the run's own
    except ValueError as e:
        st.error(_("Paths not added: {error}").format(error=e))
        extra = []
    options = sorted({json.dumps(p) for p in [*base, *extra]}, key=lambda s: (s.count(","), s))
    keep = st.multiselect(_("Paths (remove one with its ×)"), options, default=options,
                          key=f"medusa.paths.{preset}.{typed}")
    if preset == HEADS_DEFAULT and not extra:
        return ""
    return json.dumps([json.loads(p) for p in keep]) if keep else ""


def params() -> dict:
    acceptance = control("medusa", "acceptance")
    rule = draft_length.controls("medusa")  # how many of the tree's depths a step keeps
    return {"tree": tree_editor(), "acceptance": acceptance, **rule}


def _nodes(trace: Trace) -> int:
    """The run's tree size: the most nodes one step verified."""
    return max((len(s.nodes) for s in trace.steps), default=0)


def _remember(trace: Trace, source: str | None) -> None:
    """Keep a Medusa run in this session's comparison of trees (recorded, imported or live); source: the
    recorded preset's name, None for the run on this page (both named in the visitor's language when shown)."""
    runs = st.session_state.setdefault("medusa.runs", {})
    key = json.dumps([trace.params, trace.prompt, trace.sampling], sort_keys=True)
    runs.setdefault(key, {"tree": trace.params.get("tree") or HEADS_DEFAULT, "run": source})
    runs[key] |= {"tree nodes": _nodes(trace), "acceptance": trace.params.get("acceptance"), "τ": round(trace.tau, 2),
                  "ms / token": round(1e3 * trace.wall_s / max(1, trace.new_tokens), 1),
                  "prompt": trace.prompt[:40]}


def trees_compared(trace: Trace) -> None:
    """The recorded runs of the tree presets on one prompt, then every Medusa run of this session."""
    header(_("Trees compared"), MEASURED, FROM_RUN,
           help=_("τ and time per token of Medusa with each tree preset on the same prompt, recorded one after "
                  "the other in one process, then every Medusa run of this session. A bigger tree raises τ only "
                  "while its extra nodes get accepted, and every node widens the verify pass."))
    for name, t in sorted(sources.medusa_trees().items(), key=lambda kv: _nodes(kv[1])):  # smallest tree first
        _remember(t, name)
    _remember(trace, None)
    rows = [{**r, "tree": _(HEADS_DEFAULT) if r["tree"] == HEADS_DEFAULT else r["tree"],
             "run": _("on this page") if r["run"] is None else _("recorded ({name})").format(name=r["run"])}
            for r in st.session_state["medusa.runs"].values()]
    names = {"tree": _("tree"), "run": _("run"), "tree nodes": _("tree nodes"), "acceptance": _("acceptance"),
             "ms / token": _("ms / token"), "prompt": _("prompt")}
    same = len({r["prompt"] for r in rows}) == 1  # the recorded runs' prompt: a column only once runs differ
    shown = [{names.get(k, k): v for k, v in r.items() if not (same and k == "prompt")} for r in rows]
    st.dataframe(shown, hide_index=True, column_config={names["tree"]: st.column_config.TextColumn(width="small")})
    st.caption(_("Edit the tree under **Parameters**, switch the sidebar to live and run: each run lands here "
                 "with its τ and time per token. The recorded runs are one run each on one CPU thread: compare "
                 "their times loosely."))


def panels(trace: Trace, i: int) -> dict:
    if trace.params.get("acceptance") == "typical":
        st.markdown(_(":red-badge[LOSSY] typical acceptance: faster when sampling, but the output does not follow "
                      "the target's distribution (at temperature 0 it is plain greedy matching)."))
    figs = {"heads": heads_figure(trace, i), "per_head": head_acceptance_figure(trace)}
    left, right = st.columns([1.3, 1])
    with left:
        header(_("Nodes ↔ mask rows ↔ paths"), FROM_RUN, help=_("One row per drafted node: its mask row in the "
                                                                "verify pass and the head ranks of its path."))
        names = {"node": _("node"), "mask row": _("mask row"), "head": _("head"), "rank": _("rank"),
                 "path": _("path"), "token": _("token"), "head p": _("head p"), "target p": _("target p"),
                 "status": _("status")}
        st.dataframe([{names.get(k, k): v for k, v in r.items()} for r in node_rows(trace, i)], hide_index=True,
                     height=280)
    with right:
        chart(figs["per_head"], "medusa.fig.per_head")
    trees_compared(trace)
    with st.expander(_("Tree size on this CPU")):
        st.markdown(tree_size_text())
    curve = sources.medusa_curve()
    if curve and len(curve["points"]) > 1:
        with st.expander(_("More training data?")):
            more_data(curve["points"])
    return figs


NOTICE = (_("Extra heads on the target's last hidden state each guess one more position ahead."),
          _("Their top choices form a tree; one forward checks every branch under a tree attention mask."),
          _("Later heads guess worse (acceptance per head): the tree narrows with depth for that reason."))
method_page("medusa", _("Medusa: heads on the hidden state, a tree of guesses"), INTRO, HOW, params, panels=panels,
            extra=MEDUSA, notice=NOTICE)
