"""The Tune page's parts: tune results shipped in assets/tune (written by `python -m paradec tune --state`), each
method's front, the chosen preset against the defaults, the best setting per category, and the best setting's
trace replayed."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from paradec.plots.style import MEASURED
from paradec.plots.tune import front_figure
from paradec.traces.trace import Trace
from paradec.tuner import tune_search

from .i18n import _
from .replay import replay
from .style import chart, header

TUNE_DIR = Path(__file__).resolve().parents[1] / "assets" / "tune"
HOW_TO = ("python -m paradec tune --methods eagle3,lookahead --per-category 2 --heldout-per-category 2 "  # not taught
          "--state assets/tune/NAME.json --preset-out assets/presets/cpu.json")


@st.cache_resource(max_entries=8, show_spinner=False)
def _load(path: str, mtime: float) -> dict:  # mtime in the key: a rewritten file is re-read
    return tune_search.load(path)


def pick() -> dict | None:
    files = {f.stem: f for f in sorted(TUNE_DIR.glob("*.json"))}
    if not files:
        st.info(_("No tune results are shipped yet (assets/tune/*.json). Make one with:\n\n`{command}`").format(
            command=HOW_TO))
        return None
    name = st.selectbox(_("Tune results"), list(files), key="tune.file")
    try:
        return _load(str(files[name]), files[name].stat().st_mtime)
    except ValueError as e:
        st.error(str(e))
        return None


def show(state: dict) -> None:
    s = state["settings"]
    st.caption(_("Tuned {created} on {cpu} ({cores} cores) · model {model} · {search} search prompts, {heldout} "
                 "held-out · {new} new tokens").format(
        created=state["created"], cpu=state["machine"].get("cpu", "?"), cores=state["machine"].get("cores", "?"),
        model=s["model"] or "embedded", search=len(s["search"]), heldout=len(s["heldout"]), new=s["max_new_tokens"]))
    done = {m: v for m, v in state["methods"].items() if "final" in v}
    if not done:
        st.warning(_("This tune run has not finished a method yet (resume it with the same command)."))
        return
    method = st.radio(_("Method"), list(done), horizontal=True, key="tune.method")
    mine, final = done[method], done[method]["final"]
    header(_("The front: speed-up against τ"), MEASURED,
           help=_("Every setting the tuner tried: its τ (x) against its measured speedup (y). The best settings sit "
                  "top-left of the cloud: a higher τ is only worth what its wider verify pass costs."))
    chart(front_figure(method, mine), f"tune.front.{method}")
    header(_("Chosen against the defaults, held-out prompts"), MEASURED,
           help=_("The tuned setting against the default one on prompts the tuner never saw, measured in one "
                  "process: the honest test of whether tuning helped."))
    st.dataframe([{_("setting"): k, **final["scores"][k]} for k in final["finalists"]], hide_index=True)
    st.markdown(_("**Chosen:** `{best}` ({speedup:.2f}×, τ {tau:.2f}) against the defaults' {default_speedup:.2f}× "
                  "(τ {default_tau:.2f}); its settings: `{params}`").format(
        best=final["best"], speedup=final["speedup"], tau=final["tau"], default_speedup=final["default_speedup"],
        default_tau=final["default_tau"], params=final["best_params"]))
    header(_("The best setting per category (the task decides)"), MEASURED,
           help=_("The fastest setting for each prompt category: code, maths and extraction reward longer drafts "
                  "than open-ended writing."))
    st.dataframe([{_("category"): c, _("best"): b["key"], _("speedup"): b["speedup"], "tau": b["tau"],
                   _("defaults' speedup"): b["default_speedup"]} for c, b in final["by_category"].items()],
                 hide_index=True)
    if st.button(_("Replay the chosen setting's trace"), key=f"tune.replay.{method}", icon=":material/replay:"):
        st.session_state["tune.replaying"] = method
    if st.session_state.get("tune.replaying") == method:
        replay(Trace.from_dict(final["trace"]), f"tune_{method}")
