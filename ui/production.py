"""The Production engine page's parts: a results file of `bench --peers vllm=...` (shipped in
assets/bench) or a live prompt on the operator's engine, drawn as paradec's matching method beside
the engine: τ, acceptance per position and speedup, and the two step traces in one player."""
from __future__ import annotations

import streamlit as st

from paradec import bench_report
from paradec.plots import bench as plots
from paradec.plots import kpis
from paradec.plots.arena import bars_figure
from paradec.plots.style import FROM_RUN, MEASURED
from paradec.plots.tokens import stream_html
from paradec.production import workload
from paradec.production.config import EngineError, Peer
from paradec.stage.figure_text import stream_words
from paradec.traces.trace import Trace

from . import live, offered, player, stage
from .bench import BENCH_DIR, OLD_FILE, shown
from .i18n import N_, _, labelled, words
from .presets import DEFAULT_DRAFT
from .sidebar import current
from .style import chart, header

NS = "production"
HOW_TO = ("python -m paradec bench --methods eagle3 --split heldout --per-category 1 --peers "  # not taught
          "vllm=http://gpu-box:8000,method=eagle3,baseline=http://gpu-box:8001 --out assets/bench/NAME.json")
LIVE = N_("live run (this session)")  # the results choice of this session's live run (its value stays English)


@st.cache_resource(max_entries=16, show_spinner=False)
def _load(path: str, mtime: float) -> dict:  # mtime in the key: a rewritten file is re-read
    return bench_report.load(path)


def pick() -> dict | None:
    """The comparison to show: this session's live run, or a shipped results file with an engine in it."""
    found = {}
    for f in sorted(BENCH_DIR.glob("*.json")):
        try:
            report = _load(str(f), f.stat().st_mtime)
        except bench_report.ResultsError as e:
            st.error(str(e))
            continue
        if report.get("engines"):
            found[f.stem] = report
    if st.session_state.get(f"{NS}.live"):
        found[LIVE] = st.session_state[f"{NS}.live"]
    if not found:
        st.info(_("No results with an engine are shipped (assets/bench). Make one on a GPU machine with:\n\n"
                  "`{command}`").format(command=HOW_TO))
        return None
    if st.session_state.pop(f"{NS}.show_live", False):  # set below the selectbox: applied before it is drawn
        st.session_state[f"{NS}.file"] = LIVE
    return found[st.selectbox(_("Results"), list(found), key=f"{NS}.file",
                              format_func=labelled({LIVE: LIVE}))]


def _rows(report: dict, name: str, e: dict) -> list[dict]:
    """paradec's matching method, the engine and its baseline, as one table."""
    rows = []
    pairs = [(e.get("matching"), _("paradec's AR")), (name, f"{name}_baseline"), (f"{name}_baseline", _("itself"))]
    for row, against in pairs:
        m = report["methods"].get(row or "")
        if m:
            rows.append({_("run"): row, "τ": m["tau"], **shown(report, m), _("speedup"): m["speedup"],
                         _("speedup against"): against, _("tokens/s"): m["tokens_per_s"],
                         _("identical"): m["identical_runs"], _("runs"): m["runs"]})
    return rows


def show(report: dict) -> None:
    if report.get("example"):
        st.warning(report["example"], icon=":material/science:")
    for name, e in report["engines"].items():
        st.caption(_("{kind} serving `{model}` with method **{method}** (paradec's match: **{matching}**) · figures "
                     "from {source} · {prompts} prompts, {new_tokens} new tokens, temperature {temperature} · "
                     "paradec on {paradec_model}").format(
            kind=e["kind"], model=e["model"], method=e["method"] or _("not given"),
            matching=e.get("matching") or _("none"), source=e["source"], prompts=report["prompts"],
            new_tokens=report["max_new_tokens"], temperature=report["temperature"], paradec_model=report["model"]))
        for note in e.get("notes", []):
            st.caption(f"⚠ {note}")
        if "accept_length_server_life" in e:
            st.metric(_("{engine}: avg_spec_accept_length (cumulative over the server's life)").format(engine=name),
                      f"{e['accept_length_server_life']:.2f}")
        _figures(report, name, e)
        if e.get("trace"):
            _steps(Trace.from_dict(e["trace"]), e.get("paradec_trace") and Trace.from_dict(e["paradec_trace"]))


def _figures(report: dict, name: str, e: dict) -> None:
    header(_("Side by side"), FROM_RUN, MEASURED,
           help=_("The serving engine's speculative decoding against paradec's matching method on the same prompts: "
                  "τ, acceptance and each one's speedup over its own baseline."))
    st.dataframe(_rows(report, name, e), hide_index=True)
    if not bench_report.tested_counted(report):
        st.caption(_(OLD_FILE))
    pair = {m: report["methods"][m] for m in (e.get("matching"), name) if m in report["methods"]}
    left, right = st.columns(2)
    with left:
        header(_("τ: tokens per target forward, bonus included"), FROM_RUN,
               help=_("Tokens committed per target forward for the engine and for paradec's matching method. Equal τ "
                      "means both accept drafts equally often; their speedups can still differ with their step "
                      "costs."))
        chart(bars_figure({m: v["tau"] for m, v in pair.items() if v["tau"] is not None}, "τ (AR = 1.00)"),
              f"{NS}.tau.{name}")
    with right:
        header(_("Acceptance per draft position"), FROM_RUN,
               help=_("The share of drafts accepted at each draft position, engine beside paradec. It falls with "
                      "depth, since a token is tested only when every one before it was accepted."))
        chart(plots.positions_figure({"methods": pair}), f"{NS}.positions.{name}")


def _frame(engine: Trace, mine: Trace | None, i: int) -> dict:
    figs, story = {}, []
    for slot, t in (("engine", engine), ("mine", mine)):
        if t is None:
            continue
        j = min(i, len(t.steps) - 1)
        story.append(_("<b>{method}</b>: step {step} of {steps}, {accepted} of {drafted} drafts accepted, running τ "
                       "{tau:.2f}").format(method=t.method, step=j + 1, steps=len(t.steps),
                                           accepted=len(t.steps[j].accepted), drafted=len(t.steps[j].nodes),
                                           tau=kpis.running_tau(t, j)))
        figs[slot] = stage.fig_json(kpis.tokens_figure(t, j))
    stream = (stream_html(mine, min(i, len(mine.steps) - 1), True, stream_words(words())) if mine
              else _("No paradec run of this prompt."))
    return {"story": "<br>".join(story), "figs": figs, "html": {"stream": stream}}


def _steps(engine: Trace, mine: Trace | None) -> None:
    """Both runs of the first prompt, one step at a time: the engine's counts beside paradec's tokens."""
    header(_("Step by step: the first prompt on both"), FROM_RUN,
           help=_("The first prompt decoded by the engine and by paradec, one step at a time: how many tokens each "
                  "committed per target forward."))
    n = max(len(engine.steps), len(mine.steps) if mine else 0)
    key = f"{NS}:{id(engine)}:{id(mine)}:{n}"  # frames_json and the player add the visitor's language
    panels = [[stage.Panel("engine", _("{method}: tokens per step").format(method=engine.method), _(ENGINE_HELP),
                           caption=_(ENGINE_CAPTION)),
               stage.Panel("mine", _("paradec's {method}: tokens per step").format(method=mine.method) if mine
                           else _("paradec's run: tokens per step"),
                           _("Tokens committed at each step of paradec's run of the same prompt."))],
              [stage.Panel("stream", _("paradec's text"), _(stage.STREAM.help), html=True)]]
    frames = stage.frames_json(key, engine, lambda: [_frame(engine, mine, i) for i in range(n)])
    player.show(NS, n, {"key": key, "frames": frames, "template": stage.template(), "n": n,
                        "panels": [[p.spec(words()) for p in row] for row in panels]})


ENGINE_HELP = N_("Tokens the engine committed at each verify step: its accepted drafts plus its own token.")
ENGINE_CAPTION = N_("The engine reports how many it drafted and accepted each step, not which tokens: no text, no "
                    "tree, no p or q. Its prefill forward (the first token) is no step of its arrays.")


def configured() -> Peer | None:
    """The operator's engine (PARADEC_ENGINE), shown; an error box for a malformed one."""
    try:
        peer = offered.engine()
    except offered.Refused as e:
        st.error(str(e))
        return None
    if peer is None:
        st.caption(_("No engine is configured: the operator names one in {variable} "
                     "(e.g. vllm=http://gpu-box:8000,method=eagle3,baseline=http://gpu-box:8001).").format(
            variable=offered.ENGINE))
        return None
    text = (_("**Live**: the operator's {kind} engine serves method **{method}**, with a baseline URL. Run the "
              "sidebar's prompt on it and on paradec's **{matching}**.") if peer.baseline else
            _("**Live**: the operator's {kind} engine serves method **{method}**. Run the sidebar's prompt on it "
              "and on paradec's **{matching}**."))
    st.markdown(text.format(kind=peer.kind, method=peer.method or _("not given"),
                            matching=peer.matching or _("AR only")))
    return peer


def live_run() -> None:
    peer = configured()
    if peer is None or not st.button(_("Run this prompt on the engine and in paradec"), key=f"{NS}.run",
                                     icon=":material/play_circle:"):
        return
    try:
        with st.spinner(_("asking the engine, then decoding in paradec…")):
            st.session_state[f"{NS}.live"] = _compare(peer)
        st.session_state[f"{NS}.show_live"] = True
        st.rerun()
    except EngineError as e:
        st.error(str(e))
    except live.errors() as e:
        st.error(str(e))


def _compare(peer: Peer) -> dict:
    """The sidebar's prompt on the engine (and its baseline) and on paradec (AR and the matching method),
    as a results report of one prompt."""
    s = current()
    settings = {"max_new_tokens": s.max_new_tokens, "temperature": s.temperature, "top_p": s.top_p, "top_k": 0,
                "seed": s.seed}
    got = workload.one(peer, s.prompt, settings)
    methods = ["ar"] + ([peer.matching] if peer.matching else [])
    keys = {m: live.key(s, m, {}, DEFAULT_DRAFT if m == "sps" else None) for m in methods}
    traces = live.run_set(keys)
    row = {"id": 1, "category": "this prompt", "prompt": s.prompt}
    runs = {m: [(row, bench_report.record(t))] for m, t in traces.items()}
    runs[peer.name] = [(row, got["record"])]
    if got["baseline"]:
        runs[f"{peer.name}_baseline"] = [(row, got["baseline"])]
    header_ = {"model": s.model, "max_new_tokens": s.max_new_tokens, "temperature": s.temperature}
    report = bench_report.aggregate(runs, [row], header_)
    mine = traces.get(peer.matching)
    report["engines"] = {peer.name: {**got["section"], "trace": got["trace"],
                                     "paradec_trace": mine.to_dict() if mine else None}}
    return report
