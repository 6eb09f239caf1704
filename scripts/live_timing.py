"""How long a live run takes in the app, click to trace, against the same decodes through Runner.decode.

    python scripts/live_timing.py [--method eagle3] [--repeats 3] [--out FILE]

Starts the app on a free port, opens the EAGLE page in headless Chromium in live mode, and for each repeat
waits until the browser is idle (a teacher reads the page before pressing Run), clicks "Run live" (a new seed
each time, so nothing is cached; greedy, so the tokens are the same) and times until the page shows the
live trace. A live run decodes the method and then AR on the same settings (its baseline), before the page
draws. Then, in this process, it times the same two requests (the device's tuned settings, which live runs
start on) through paradec.runner.Runner.decode, the model loaded first, untimed. Prints one JSON line: the
medians, their ratio, and the ratio to the method's decode alone; and, apart, when the details under the player
(the step's charts, which the page draws once the browser has drawn the player) showed; and the speed-up over AR
the page showed for each run beside the one the same two decodes give here (each trace's own timed decoding).
Run it on a quiet machine."""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from ui_check import free_port, wait_health  # noqa: E402  (the repository's page checker)

from paradec.runner import Request, Runner  # noqa: E402
from paradec.tuning import presets  # noqa: E402

PROMPT = "Explain in three sentences why the sky is blue."  # the sidebar's first preset
NEW = 48  # the sidebar's default


def measure(method: str, repeats: int) -> dict[str, list[float]]:
    """Click to trace in the app and the same two decodes here, taken in turns (one click, then the two
    decodes), so that a machine whose speed drifts over the minutes slows both sides alike."""
    from playwright.sync_api import sync_playwright

    runner, params = Runner("cpu", "float32"), presets.device_profile(presets.device_info("cpu")).params(method)
    runner.target("embedded")
    runner.decode(Request("ar", PROMPT, {}, 4))  # warm-up
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    times: dict[str, list[float]] = {"app": [], "details": [], method: [], "ar": [], "app_x": [], "runner_x": []}
    try:
        base = f"http://127.0.0.1:{port}"
        wait_health(base, None, 60)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--headless"])
            page = browser.new_page(viewport={"width": 1920, "height": 1080})
            for seed in range(repeats + 1):  # a new seed each time, so that nothing is cached (greedy: same tokens)
                app, details, app_x = _click_to_trace(page, f"{base}/eagle?source=live&version={method}&seed={seed}",
                                                      method)
                _browser_idle()  # the player draws its stills ahead while the browser idles: not during a decode
                if seed:  # the first run loads the model: not counted
                    times["app"].append(app)
                    times["details"].append(details)
                    times["app_x"].append(app_x)
                    traces = {}
                    for name, given in ((method, params), ("ar", {})):
                        t0 = time.perf_counter()
                        traces[name] = runner.decode(Request(name, PROMPT, given, NEW, seed=seed))
                        times[name].append(time.perf_counter() - t0)
                    times["runner_x"].append(traces[method].speedup_over(traces["ar"]))
    finally:
        server.terminate()
        server.wait(30)
    return times


def _click_to_trace(page, url: str, method: str) -> tuple[float, float, float]:
    """Seconds from the click to the live trace's player, and to the details under it; the speed-up over AR the
    page then shows."""
    page.goto(url)
    button = page.get_by_role("button", name="Run live on these settings")
    button.wait_for(timeout=120_000)
    _browser_idle()
    page.evaluate(WATCH, [method, NEW])
    button.click()
    page.wait_for_function("() => window.__pd.details", polling=250, timeout=600_000)
    seen, details = page.evaluate("() => [(window.__pd.seen - window.__pd.click) / 1000, "
                                  "(window.__pd.details - window.__pd.click) / 1000]")
    versus = page.get_by_text(re.compile(r"x AR on this prompt")).first.text_content(timeout=60_000)
    return seen, details, float(re.search(r"([0-9.]+)x AR", versus).group(1))


# Timed in the page, from the click to the frame that first shows the live trace: its caption ("Trace: eagle3
# (...) · 48 tokens in 28 target forwards"), a player whose label counts as many steps ("Step 3 of 28") and
# the step's draft tree and attention mask drawn by plotly; then to the frame that shows the details' heading for
# that step ("Details of step 3"). Checked on every animation frame only once the caption and label show.
# A MutationObserver, not a check on every animation frame: that makes Chromium draw 60 frames a second, on
# the cores the decode runs on (it made a 1.4-s decode take 7 s), and a locator's wait polls only every 500 ms.
WATCH = """([method, n]) => {
  window.__pd = {};
  document.addEventListener('click', () => { window.__pd.click = performance.now(); }, {capture: true, once: true});
  const shown = () => {
    const cap = [...document.querySelectorAll('[data-testid="stCaptionContainer"]')].map(e => e.textContent)
      .find(t => t.startsWith(`Trace: ${method} (`) && t.includes(`${n} tokens in`));
    const steps = cap && cap.match(/tokens in (\\d+) target forwards/);
    const label = document.querySelector('.pd-player .pd-step-label');
    return !!(steps && label && label.textContent.endsWith(`of ${steps[1]}`));
  };
  const drawn = () => {  // the stage's tree and mask drawn by plotly for the step shown (paradec/web/player_stage.js)
    const P = document.querySelector('.pd-player').parentElement.__pdPlayer;
    if (['tree', 'mask'].every(name => P.stills.has(P.want[name]))) window.__pd.seen = performance.now();
    else requestAnimationFrame(drawn);
  };
  const seen = new MutationObserver(() => {
    if (window.__pd.click && !window.__pd.step && shown()) {
      window.__pd.step = document.querySelector('.pd-player .pd-step-label').textContent.split(' ')[1];
      requestAnimationFrame(drawn);
    }
    const heads = window.__pd.seen ? [...document.querySelectorAll('h4')].map(h => h.textContent.trim()) : [];
    if (heads.some(h => h.startsWith(`Details of step ${window.__pd.step}`))) {
      seen.disconnect();
      requestAnimationFrame(() => { window.__pd.details = performance.now(); });
    }
  });
  seen.observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def _browser_idle(quiet: float = 0.05, window: float = 0.5) -> None:
    """Wait until Chromium's processes use under `quiet` of a core over `window` seconds: the page is drawn."""
    def cpu_s() -> float:
        ticks = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                text = stat.read_text()
            except OSError:  # the process ended
                continue
            if "chrom" in text[text.index("("):text.rindex(")")]:
                ticks += sum(int(f) for f in text[text.rindex(")") + 2:].split()[11:13])
        return ticks / os.sysconf("SC_CLK_TCK")

    for _ in range(120):
        before = cpu_s()
        time.sleep(window)
        if cpu_s() - before <= quiet * window:
            return


def _machine() -> dict:
    """paradec's description of this machine, and the CPU's family and model (which generation it is)."""
    from paradec.costs import machine

    return {**machine.describe(), **{key: machine.cpu_field(key) for key in ("cpu family", "model")}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", default="eagle3", choices=["eagle", "eagle2", "eagle3"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    t = measure(a.method, a.repeats)
    app, both = t["app"], [m + b for m, b in zip(t[a.method], t["ar"])]
    result = {"method": a.method, "new_tokens": NEW, "machine": _machine(),
              "app_click_to_trace_s": [round(x, 2) for x in app],
              "runner_decode_s": {name: [round(x, 2) for x in t[name]] for name in (a.method, "ar")},
              "ratios": [round(x / y, 2) for x, y in zip(app, both)],
              "ratio": round(statistics.median(app) / statistics.median(both), 2),
              "ratio_to_the_method_alone": round(statistics.median(app) / statistics.median(t[a.method]), 2),
              "app_click_to_details_s": [round(x, 2) for x in t["details"]],
              "speedup_shown_by_the_app": t["app_x"], "speedup_here": [round(x, 2) for x in t["runner_x"]]}
    print(json.dumps(result))
    if a.out:
        from paradec.traces.files import write_atomic

        write_atomic(a.out, json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
