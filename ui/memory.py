"""Memory per method: the Roofline page's model of the GPU presets (paradec.costs.memory_model) and the Benchmark
page's measured table (paradec.costs.memory, in a bench results file)."""
from __future__ import annotations

import streamlit as st

from paradec.costs import memory_model
from paradec.plots.style import MEASURED, MODEL

from .style import header


def gpu_table() -> None:
    header("Memory per method on the GPU presets, at 4k and 32k tokens of context", MODEL,
           help="What each method adds to the target's weights and KV cache on the GPU presets: draft weights, heads "
                "and their caches, computed from the models' shapes at 4k and 32k tokens of context.")
    st.dataframe(memory_model.table(), hide_index=True)
    st.caption(f"GiB. Weights in bf16 (the target; the draft or heads the method reads), the KV cache at the "
               f"context plus a verify pass of {memory_model.VERIFY} tokens before its rejected rows are dropped "
               "(a draft model's and an EAGLE head's one layer too), and a verify pass's activations (float32 "
               "logits and one layer's transients). At 32k the KV cache, not the draft, is what grows.")


def bench_table(report: dict) -> None:
    mem = report.get("memory", {}).get("methods")
    if not mem:
        return
    header("Memory per method, measured", MEASURED,
           help="The peak memory each method used in the benchmark run, beside the target alone: what drafting costs "
                "in memory on this machine.")
    ar = mem.get("ar", {}).get("peak")
    st.dataframe([{"method": n, **{k: round(v / 2**20, 2) for k, v in m.items()},
                   "vs AR": round(m["peak"] / ar, 2) if ar else None} for n, m in mem.items()], hide_index=True)
    st.caption(f"MiB. {report['memory']['how']}.")
