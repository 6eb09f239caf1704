"""The figures the pages' texts quote, read from the shipped files each time a page is drawn, so a new
benchmark, forward-cost probe, tuned preset or recorded trace changes the text with it: no page types a
measured number by hand. A file that is missing gives "?" in the text, never an error."""
from __future__ import annotations

import json
from pathlib import Path

from paradec import catalog
from paradec.tuning import presets

from . import sources
from .bench import MAIN, main_report
from .i18n import _

MISSING = "?"
DRAFTERS = Path(__file__).resolve().parents[1] / "assets" / "drafters"
BENCH_FILE = f"assets/bench/{MAIN}.json"


def pass_cost(tokens: int) -> str:
    """One target forward over `tokens` tokens in one-token passes, paradec's measured median
    (assets/traces/forward_cost.json, the Roofline page's curve)."""
    cost = sources.forward_cost()
    if not cost or tokens not in cost["tokens"] or "paradec" not in cost["curves"]:
        return MISSING
    med = cost["curves"]["paradec"]["median_ms"]
    return f"{med[cost['tokens'].index(tokens)] / med[0]:.2f}"


def bench(method: str, key: str) -> str:
    """A method's figure over every prompt of the main benchmark (the Benchmark page's first file):
    "speedup" as 1.23×, "tau" as 1.23."""
    report = main_report()
    value = report and report["methods"].get(method, {}).get(key)
    if value is None:
        return MISSING
    return f"{value:.2f}×" if key == "speedup" else f"{value:.2f}"


def bench_prompts() -> str:
    report = main_report()
    return str(report["prompts"]) if report else MISSING


def fastest(report: dict | None, group: str = "") -> str:
    """The method with the highest speedup over the report's prompts (group: one category's), AR aside."""
    rows = (report["categories"].get(group, {}) if group else report["methods"]) if report else {}
    rows = {m: r["speedup"] for m, r in rows.items() if m != "ar" and r.get("speedup") is not None}
    return max(rows, key=rows.get) if rows else MISSING


def preset(method: str) -> dict:
    """The tuned CPU preset's settings for a method (assets/presets/cpu.json) over its defaults."""
    return {**catalog.method(method).defaults(), **presets.tuned("cpu")[0].get(method, {})}


def drafter(folder: str) -> dict:
    """A shipped drafter's training facts (assets/drafters/FOLDER: stats.json, or an EAGLE head's config.json,
    which keeps them as "trained"), {} when it is not shipped."""
    base = DRAFTERS / folder
    for name, key in (("stats.json", None), ("config.json", "trained")):
        if (base / name).is_file():
            data = json.loads((base / name).read_text(encoding="utf-8"))
            return data.get(key, {}) if key else data
    return {}


def share(value) -> str:
    """A fraction as a percentage (0.41 -> 41%), "?" when the file lacks it."""
    return MISSING if value is None else f"{value:.0%}"


def thousands(value) -> str:
    """A count in thousands (451932 -> 452k), "?" when the file lacks it."""
    return MISSING if value is None else f"{value / 1000:.0f}k"


def recorded(name: str) -> dict:
    """A recorded trace's settings (assets/traces/NAME.json), {} when it is not shipped."""
    path = sources.TRACE_DIR / f"{name}.json"
    return sources.load(path).params if path.is_file() else {}


def step_ms(name: str) -> tuple[str, str]:
    """A recorded run's mean draft ms per drafted token and mean verify ms per step, the prefill left out."""
    path = sources.TRACE_DIR / f"{name}.json"
    steps = sources.load(path).steps[1:] if path.is_file() else []
    drafted = sum(len(s.nodes) for s in steps)
    if not steps or not drafted:
        return MISSING, MISSING
    return f"{sum(s.draft_ms for s in steps) / drafted:.0f}", f"{sum(s.verify_ms for s in steps) / len(steps):.0f}"



def task_decides(report: dict | None) -> str:
    """Which method is the fastest on each task of a benchmark, from its categories."""
    wins: dict[str, list[str]] = {}
    for cat in (report or {}).get("categories", {}):
        wins.setdefault(fastest(report, cat), []).append(cat.replace("_", " "))
    return _("the fastest method changes with the task ({wins})").format(
        wins="; ".join(_("{method} on {tasks}").format(method=m, tasks=", ".join(cats)) for m, cats in wins.items()))


def _race(runs: dict) -> tuple[str, float]:
    """The race's winner against AR and its speedup (measured step times)."""
    ar = runs.get("ar")
    speed = {m: t.speedup_over(ar) for m, t in runs.items() if m != "ar"} if ar else {}
    here = max(speed, key=speed.get) if speed else MISSING
    return here, speed.get(here, 0.0)


def arena_note(runs: dict) -> str:
    """The Arena's one prompt against the Benchmark page's many, in one sentence."""
    (here, x), report = _race(runs), main_report()
    best = fastest(report)
    return _("**One prompt, one task**: here {here} wins ({x:.2f}×), while over the **Benchmark** page's "
             "{prompts} prompts of every task ({file}) {best} is the fastest ({speedup}): the task decides, and "
             "{decides}.").format(here=here, x=x, prompts=bench_prompts(), file=BENCH_FILE, best=best,
                                  speedup=bench(best, "speedup"), decides=task_decides(report))


def benchmark_note(report: dict) -> str:
    """The Benchmark's many prompts against the Arena page's one, in one sentence."""
    runs = sources.arena()
    (here, x), prompt = _race(runs), next(iter(runs.values())).prompt if runs else ""
    return _("**Many prompts, many tasks**: {best} is the fastest over these {prompts}, while the **Arena** page "
             "races every method on one prompt (“{prompt}…”) and {here} wins there ({x:.2f}×): the task decides, "
             "and {decides}.").format(best=fastest(report), prompts=report["prompts"], prompt=prompt[:60], here=here,
                                      x=x, decides=task_decides(report))
