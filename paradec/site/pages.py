"""The static site's other pages: the index (every page, in the app's order), the roofline, the arena, the benchmark,
the glossary, and how to run the app for live decoding. Each draws the app's figures (paradec.plots) from the files
the app reads (assets/)."""
from __future__ import annotations

import json
from pathlib import Path

from .. import bench_report, catalog
from ..costs import machine, measured
from ..costs.roofline import HARDWARE, MODELS
from ..learn import roofline as roofline_questions
from ..plots import arena as arena_plots
from ..plots import bench as bench_plots
from ..plots.kpis import cost_figure
from ..plots.roofline import roofline_figure
from ..plots.style import FROM_RUN, MEASURED, MODEL
from ..plots.tokens import stream_html
from ..stage import learn as worded
from ..stage.figure_text import stream_words
from ..stage.frames import fig_json
from ..stage.terms import SECTIONS
from ..traces.trace import Trace
from ..words import N_, Words
from .html import Page, chart, esc, file_of
from .method import badges, link

OTHER = {"roofline": N_("Roofline: why that is slow"), "arena": N_("Arena: one prompt, raced"),
         "benchmark": N_("Benchmark: many prompts"), "glossary": N_("Glossary: the article's words")}
GROUPS = {N_("1. The idea"): ["ar", "roofline"], N_("2. The methods"): None, N_("3. Compare"): ["arena", "benchmark"],
          N_("5. The article"): ["glossary"]}  # None: every other method page


def titles(urls: list[str], tr: Words) -> dict[str, str]:
    """Each exported page's link label, in the app's words."""
    pages = catalog.pages()
    return {u: tr(pages[u].link) if u in pages else tr(OTHER[u]) for u in urls}


def index(urls: list[str], tr: Words) -> Page:
    named = titles(urls, tr)
    title = tr("paradec: parallel decoding, step by step")
    body = f"<h1>{esc(title)}</h1><p>{esc(tr(INDEX))}</p>"
    shown = set()
    for group, members in GROUPS.items():
        members = [u for u in (members or [u for u in named if u in catalog.pages()]) if u in named and u not in shown]
        shown.update(members)
        if members:
            items = "".join(f"<li><a href='{file_of(u, tr.lang)}'>{esc(named[u])}</a></li>" for u in members)
            body += f"<h2>{esc(tr(group))}</h2><ul class='pd-index'>{items}</ul>"
    return Page("index", "paradec", body, "index")


INDEX = N_("Every step of every method, replayed from runs recorded on a CPU with SmolLM2-135M-Instruct: what was "
           "drafted, what the target verified in one forward pass, what it accepted and why. Press Play, or step "
           "with the arrow keys; predict mode asks you before each verify pass.")


def roofline(assets: Path, tr: Words) -> Page:
    page = Page("roofline", tr("Roofline"), "", "roofline")
    title = tr("Roofline: why one token at a time wastes the hardware")
    body = f"<h1>{esc(title)}</h1><p>{esc(tr(ROOF))}</p>"
    page.data["questions"] = [worded.question(q, tr, link(tr.lang)) for q in roofline_questions.questions(assets)]
    body += "<div id='pd-quiz'></div>"
    model = MODELS["SmolLM2-135M-Instruct"]
    cost_file = assets / "traces" / "forward_cost.json"
    cost = json.loads(cost_file.read_text()) if cost_file.is_file() else None
    here, timed = (cost and measured.timed(cost)) or (None, None)  # the passes timed at both precisions, on their roof
    if here is None:
        try:
            here = machine.recorded(assets / "traces" / "machine.json")
        except (OSError, ValueError, KeyError, TypeError):
            here = None  # traces recorded without their machine: the data-sheet chip alone
    help_ = tr("Attainable FLOP/s (y) against arithmetic intensity, FLOPs per byte moved (x). Left of the ridge a "
               "pass waits on memory, so extra tokens in it are nearly free; AR decoding sits far left, verify "
               "passes further right.")
    for key, hw, dtype, passes in [("cpu", here, "float32", timed), ("gpu", HARDWARE["H100 SXM"], "bfloat16", None)]:
        if hw is not None:
            body += chart(page, key, fig_json(roofline_figure(hw, model, dtype, timed=passes), tr.lang),
                          tr("Roofline"), badges(tr, MODEL, *([MEASURED] if passes else [])), help_)
    if cost:
        body += chart(page, "cost", fig_json(cost_figure(cost), tr.lang), tr("Measured cost of one forward pass"),
                      badges(tr, MEASURED))
    page.body = body
    return page


ROOF = N_("A forward pass reads every weight once however many tokens it processes, and does about two FLOPs per "
          "weight per token. Left of the chip's ridge point a pass waits on memory and extra tokens ride along "
          "almost free; past it, each costs its arithmetic. Below: the CPU that recorded the traces, a data-sheet "
          "GPU, and the measured cost of a pass on that CPU by tokens per pass.")


def arena(runs: dict[str, Trace], tr: Words) -> Page:
    page = Page("arena", tr("Arena: all methods"), "", "other")
    ar = runs.get("ar")
    title = tr("Arena: every method, one prompt")
    body = f"<h1>{esc(title)}</h1>"
    t = next(iter(runs.values()))
    body += "<p class='pd-caption'>" + esc(tr("Prompt: “{prompt}” · {model} · temperature {temperature} · "
                                              "{device}/{dtype} · all runs in one process, one after the other").format(
        prompt=t.prompt[:100], model=t.model, temperature=t.sampling.get("temperature"), device=t.device,
        dtype=t.dtype)) + "</p><div class='pd-streams'>"
    for m, run in runs.items():
        same = "" if ar is None else (tr("identical to AR") if run.token_ids == ar.token_ids else tr("differs from AR"))
        body += (f"<div><b>{esc(m)}</b> <span class='pd-same'>{esc(same)}</span>"
                 f"{stream_html(run, len(run.steps) - 1, False, stream_words(tr))}</div>")
    body += "</div>"
    body += chart(page, "race", fig_json(arena_plots.race_figure(runs), tr.lang), tr("Race replay in sync"),
                  badges(tr, MEASURED))
    body += chart(page, "tau", fig_json(arena_plots.bars_figure({m: r.tau for m, r in runs.items()}, "τ (AR = 1.00)"),
                                        tr.lang), tr("Tokens per target forward (τ)"), badges(tr, FROM_RUN))
    if ar is not None:
        speed = {m: r.speedup_over(ar) for m, r in runs.items() if r.wall_s}
        fig = arena_plots.bars_figure(speed, tr("tokens/s ÷ AR's tokens/s"), "{:.2f}×")
        body += chart(page, "speed", fig_json(fig, tr.lang), tr("Speedup against AR"), badges(tr, MEASURED))
    body += chart(page, "lengths", fig_json(arena_plots.length_histogram(runs), tr.lang), tr("Acceptance length"),
                  badges(tr, FROM_RUN))
    page.body = body
    return page


def benchmark(report: dict, tr: Words) -> Page:
    page = Page("benchmark", tr("Benchmark"), "", "other")
    title = tr("Benchmark: every method against AR and its peers")
    body = f"<h1>{esc(title)}</h1>"
    body += f"<pre class='pd-report'>{esc(bench_report.format_report(report))}</pre>"
    body += chart(page, "speedup", fig_json(bench_plots.speedup_figure(report), tr.lang),
                  tr("Speedup against paradec's AR, same run"), badges(tr, MEASURED))
    taus = {m: v["tau"] for m, v in report["methods"].items() if v["tau"] is not None}
    body += chart(page, "tau", fig_json(arena_plots.bars_figure(taus, "τ (AR = 1.00)"), tr.lang),
                  tr("τ: tokens per target forward"), badges(tr, FROM_RUN))
    body += chart(page, "positions", fig_json(bench_plots.positions_figure(report), tr.lang),
                  tr("Acceptance per draft position"), badges(tr, FROM_RUN))
    page.body = body
    return page


def glossary(urls: list[str], tr: Words) -> Page:
    named = titles(urls, tr)
    example, find = esc(tr("e.g. brouillon, tree, τ")), esc(tr("Find a term"))
    meaning, where_ = esc(tr("Meaning")), esc(tr("Where to see it"))
    body = (f"<h1>{esc(tr(OTHER['glossary']))}</h1>"
            f"<input id='pd-search' class='pd-input' type='search' placeholder='{example}' aria-label='{find}'>")
    for section, terms in SECTIONS.items():
        rows = ""
        for t in terms:
            where = tr("not shown in the app") if not t.view else (
                f"<a href='{file_of(t.view, tr.lang)}'>{esc(named[t.view])}</a>" if t.view in named else esc(t.view))
            what = f" ({esc(tr(t.where))})" if t.where and t.view else ""
            rows += (f"<tr class='pd-term'><td><b>{esc(t.en)}</b></td><td><b>{esc(t.fr)}</b></td>"
                     f"<td>{esc(tr(t.meaning))}</td><td>{where}{what}</td></tr>")
        body += (f"<h2>{esc(tr(section))}</h2><table class='pd-glossary'><tr><th>English</th><th>Français</th>"
                 f"<th>{meaning}</th><th>{where_}</th></tr>{rows}</table>")
    return Page("glossary", tr("Glossary"), body, "glossary")


def about(tr: Words, repo: str) -> Page:
    """How to run the app, for what this site lacks: live decoding."""
    where = f" <a href='{esc(repo)}'>{esc(repo)}</a>" if repo else ""
    title = tr("Live decoding: run the app")
    body = (f"<h1>{esc(title)}</h1><p>{esc(tr(ABOUT))}{where}</p>"
            f"{COMMANDS}<p>{esc(tr(ABOUT_MORE))}</p>")
    return Page("about", title, body, "other")


COMMANDS = "<pre>git clone REPOSITORY paradec\ncd paradec\nmake run</pre>"  # not taught
ABOUT = N_("This site replays recorded runs: it cannot decode a prompt of your own. The app does, on the embedded "
           "model on any laptop CPU (or on a GPU with larger models): clone the repository and start it; its "
           "README.md says how, and what each page shows.")
ABOUT_MORE = N_("make run creates a virtual environment, installs everything and opens the app on the recorded "
                "traces; switch the sidebar's Trace source to live to decode your own prompt.")
