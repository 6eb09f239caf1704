"""Memory per method: the Roofline page's model of the GPU presets (paradec.tuning.memory_model) and the Benchmark
page's measured table (paradec.bench_memory, in a bench results file)."""
from __future__ import annotations

import streamlit as st

from paradec.plots.style import MEASURED, MODEL
from paradec.tuning import memory_model

from .i18n import N_, _
from .style import header

COLUMNS = {"preset": N_("preset"), "context": N_("context"), "method": N_("method"),  # the tables' words, shown
           "vs AR": N_("vs AR")}


def gpu_table() -> None:
    contexts = _(" and ").join(f"{c // 1024}k" for c in memory_model.CONTEXTS)
    header(_("Memory per method on the GPU presets, at {contexts} tokens of context").format(contexts=contexts), MODEL,
           help=_("What each method adds to the target's weights and KV cache on the GPU presets: draft weights, "
                  "heads and their caches, computed from the models' shapes at {contexts} tokens of context.").format(
               contexts=contexts))
    st.dataframe([_columns(row) for row in memory_model.table()], hide_index=True)
    st.caption(_("GiB. Weights in bf16 (the target; the draft or heads the method reads), the KV cache at the "
                 "context plus a verify pass of {verify} tokens before its rejected rows are dropped (a draft "
                 "model's and an EAGLE head's one layer too), and a verify pass's activations (float32 logits and "
                 "one layer's transients). At 32k the KV cache, not the draft, is what grows.").format(
        verify=memory_model.VERIFY))


def _columns(row: dict) -> dict:
    """A table row with its column words in the visitor's language (weights_target, kv... are the data's names)."""
    return {_(COLUMNS[k]) if k in COLUMNS else k: v for k, v in row.items()}


def bench_table(report: dict) -> None:
    mem = report.get("memory", {}).get("methods")
    if not mem:
        return
    header(_("Memory per method, measured"), MEASURED,
           help=_("The peak memory each method used in the benchmark run, beside the target alone: what drafting "
                  "costs in memory on this machine."))
    ar = mem.get("ar", {}).get("peak")
    st.dataframe([{_("method"): n, **{k: round(v / 2**20, 2) for k, v in m.items()},
                   _("vs AR"): round(m["peak"] / ar, 2) if ar else None} for n, m in mem.items()], hide_index=True)
    st.caption(f"MiB. {report['memory']['how']}.")
