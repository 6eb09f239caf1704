"""The Benchmark page's parts: results files shipped in assets/bench (written by
`python -m paradec bench --out`), drawn by method and category, and a small live run."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from paradec import bench_report
from paradec.plots import bench as plots
from paradec.plots.arena import bars_figure
from paradec.plots.style import FROM_RUN, MEASURED

from . import live, memory
from .i18n import N_, _, labelled
from .presets import PRESETS
from .sidebar import current
from .style import chart, header

BENCH_DIR = Path(__file__).resolve().parents[1] / "assets" / "bench"
MAIN = "cpu-2core"  # `make bench` writes it
HOW_TO = ("python -m paradec bench --methods pld,sps,jacobi,lookahead,medusa --prompts "  # not taught
          "assets/data/specbench_questions.jsonl --split heldout --per-category 1 --peers hf "
          "--out assets/bench/NAME.json")
LIVE = N_("live run (this session)")  # the results box's choice for this session's live run (a value: compared)
ALPHA, OLD_RATIO = N_("acceptance α"), N_("drafted tokens accepted")  # the acceptance columns' headers


@st.cache_resource(max_entries=16, show_spinner=False)
def _load(path: str, mtime: float) -> dict:  # mtime in the key: a rewritten file is re-read
    return bench_report.load(path)


def shipped() -> dict[str, Path]:
    return {f.stem: f for f in sorted(BENCH_DIR.glob("*.json"))}


def main_report(name: str = MAIN) -> dict | None:
    """A shipped benchmark (by default MAIN, the one the pages' texts quote); None when it is not shipped or
    unreadable."""
    path = BENCH_DIR / f"{name}.json"
    try:
        return _load(str(path), path.stat().st_mtime)
    except (OSError, bench_report.ResultsError):
        return None


def pick() -> dict | None:
    """The results to show: a shipped file, or this session's live run."""
    files = shipped()
    live_report = st.session_state.get("bench.live")
    choices = list(files) + ([LIVE] if live_report else [])
    if not choices:
        st.info(_("No benchmark results are shipped yet (assets/bench/*.json). Make one with:\n\n`{command}`\n\n"
                  "or run a small one live below.").format(command=HOW_TO))
        return None
    main = choices.index(MAIN) if MAIN in choices else 0  # the main benchmark first, not a side study
    name = st.selectbox(_("Results"), choices, index=main, key="bench.file",
                        format_func=labelled({LIVE: LIVE}),
                        help=_("{main}: every method against AR and Hugging Face's peers on this machine (the main "
                               "benchmark); the others are side studies and examples.").format(main=MAIN))
    if name not in files:
        return live_report
    try:
        return _load(str(files[name]), files[name].stat().st_mtime)
    except bench_report.ResultsError as e:
        st.error(str(e))
        return None


def machine(report: dict) -> str:
    m = report["machine"]
    gpu = f", {m['gpu']}" if m.get("gpu") else ""
    return _("Measured {created} on {cpu} ({cores} cores, {threads} torch threads{gpu}), {device}/{dtype}, "
             "torch {torch} · {model} · draft: {draft} · {prompts} prompts × {repeats} repeats, {new} new tokens, "
             "temperature {temperature}").format(
        created=report.get("created", ""), cpu=m.get("cpu", "?"), cores=m.get("cores", "?"),
        threads=m.get("torch_threads", "?"), gpu=gpu, device=m["device"], dtype=m["dtype"], torch=m.get("torch", "?"),
        model=report["model"], draft=report["draft"] or _("none"), prompts=report["prompts"],
        repeats=report["repeats"], new=report["max_new_tokens"], temperature=report["temperature"])


def shown(report: dict, m: dict) -> dict:
    """A method's acceptance cells as the pages show them: α over tested drafts, and the old ratio under its
    own name; a schema-1 file counted no tested drafts, so it shows the old ratio alone."""
    old = {_(OLD_RATIO): m["drafted_accepted"]}
    return {_(ALPHA): m["acceptance"], **old} if bench_report.tested_counted(report) else old


def table(report: dict, rows: list[dict]) -> list[dict]:
    """bench_report.csv_rows' rows with their acceptance cells as shown()."""
    return [{k: v for k, v in r.items() if k not in ("acceptance", "drafted_accepted")} | shown(report, r)
            for r in rows]


ACCEPTANCE = N_("acceptance α = accepted drafts / tested ones: a draft depth is tested when the accepted path reached "
                "the depth before it; drafted tokens accepted divides by every drafted node instead. None where "
                "nothing was drafted: no acceptance.")
OLD_FILE = N_("This file was written before paradec counted tested drafts: it holds only the share of drafted tokens "
              "accepted (siblings and never-tested nodes included, so trees score low), not the acceptance α "
              "(accepted / tested drafts). Re-run the benchmark for α.")


def against_fastest_ar(report: dict) -> str:
    """The speed-ups again, over the faster of paradec's AR and ar_torch (AR on torch's products), so that a slow
    kernel cannot flatter a method."""
    fastest = bench_report.fastest_ar(report)
    ours = [m for m, r in report["methods"].items()
            if r.get("tau") is not None and m not in ("ar", bench_report.TORCH_AR)]
    speeds = ", ".join(f"{m} {bench_report.speedup_over_fastest_ar(report, m):.2f}×" for m in ours)
    return _("Against the faster AR of this run ({fastest}): {speeds}.").format(fastest=fastest, speeds=speeds)


def show(report: dict) -> None:
    if report.get("example"):
        st.warning(report["example"], icon=":material/science:")
    st.caption(machine(report))
    header(_("Speedup against paradec's AR, same run"), MEASURED,
           help=_("Each method's decoding throughput divided by AR's on the same prompts in the same process: above "
                  "1× it is faster than plain one-token-at-a-time decoding on this machine, below 1× slower."))
    chart(plots.speedup_figure(report), "bench.speedup")
    st.dataframe(table(report, bench_report.csv_rows(report)[: len(report["methods"])]), hide_index=True)
    if bench_report.TORCH_AR in report["methods"]:
        st.caption(against_fastest_ar(report))
    st.caption(_(ACCEPTANCE) if bench_report.tested_counted(report) else _(OLD_FILE))
    # One figure a row: a third of a 1024-px screen has no room for a legend of eight methods.
    header(_("τ: tokens per target forward"), FROM_RUN,
           help=_("How many tokens each method commits per forward pass of the target, the bonus token included "
                  "(AR = 1.00). A method speeds up only if τ beats what its draft and its larger verify pass cost."))
    taus = {m: v["tau"] for m, v in report["methods"].items() if v["tau"] is not None}
    chart(bars_figure(taus, "τ (AR = 1.00)"), "bench.tau")
    header(_("Acceptance per draft position"), FROM_RUN,
           help=_("The share of drafting steps whose accepted path reached each position of the draft (1 = the "
                  "first drafted token). It falls with depth, since a token is only tested when every one before it "
                  "was accepted; the acceptance α_d divides by the steps that tested the position instead."))
    chart(plots.positions_figure(report), "bench.positions")
    header(_("Speedup against τ"), MEASURED, FROM_RUN,
           help=_("One point per method: τ (x) against the measured speedup (y). On the diagonal a method's steps "
                  "would cost one AR step each; the distance below it is what drafting and the wider verify pass "
                  "cost."))
    chart(plots.tau_scatter(report), "bench.scatter")
    engines = " " + _("Engine rows ({engines}) divide by their own baseline URL's tokens/s, the same model served "
                      "without speculation, not by paradec's AR: see the Production engine page.")
    st.caption(_("Speedup divides tokens/s by AR's over the same prompts in the same process; Hugging Face's "
                 "peers (hf_*) report no forward count, so no τ. Points under the diagonal pay for drafting and "
                 "for verify passes dearer than an AR step; under 1× they lose.")
               + (engines.format(engines=", ".join(report["engines"])) if report.get("engines") else ""))
    memory.bench_table(report)
    with st.expander(_("Every category")):
        st.dataframe(table(report, bench_report.csv_rows(report)[len(report["methods"]):]), hide_index=True)


def live_run() -> None:
    """A small benchmark of the draft-free methods on the sidebar's model and the preset prompts."""
    s = current()
    st.markdown(_("**Small live run**: AR, {methods} on the {n} preset prompts (one category each), {new} new "
                  "tokens, model `{model}`, in this process.").format(
        methods=", ".join(live.BENCH_METHODS), n=len(PRESETS), new=s.max_new_tokens, model=s.model))
    if st.button(_("Run the small benchmark"), key="bench.run", icon=":material/play_circle:"):
        try:
            with st.spinner(_("decoding every prompt with every method…")):
                st.session_state["bench.live"] = live.bench(s, PRESETS)
            st.session_state["bench.file"] = LIVE
            st.rerun()
        except live.errors() as e:
            st.error(str(e))
