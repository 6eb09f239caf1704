"""How long a live run takes in the app, click to trace, against the same decodes through Runner.decode.

    python scripts/live_timing.py [--method eagle3] [--repeats 3] [--out FILE]

Starts the app on a free port, opens the EAGLE page in headless Chromium in live mode, and for each repeat
waits until the browser is idle (a teacher reads the page before pressing Run), clicks "Run live" (a new seed
each time, so nothing is cached; greedy, so the tokens are the same) and times until the page shows the
live trace. A live run decodes the method and then AR on the same settings (its baseline), before the page
draws. Then, in this process, it times the same two requests (the device's tuned settings, which live runs
start on) through paradec.runner.Runner.decode, the model loaded first, untimed. Prints one JSON line: the
medians, their ratio, and the ratio to the method's decode alone. Run it on a quiet machine."""
from __future__ import annotations

import argparse
import json
import os
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


def in_app(method: str, repeats: int) -> list[float]:
    from playwright.sync_api import sync_playwright

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_health(base, None, 60)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--headless"])
            page = browser.new_page(viewport={"width": 1920, "height": 1080})
            return [_click_to_trace(page, f"{base}/eagle?source=live&version={method}&seed={seed}", method)
                    for seed in range(1, repeats + 2)][1:]  # the first run loads the model: not counted
    finally:
        server.terminate()
        server.wait(30)


def _click_to_trace(page, url: str, method: str) -> float:
    page.goto(url)
    button = page.get_by_role("button", name="Run live on these settings")
    button.wait_for(timeout=120_000)
    _browser_idle()
    t0 = time.perf_counter()
    button.click()
    page.get_by_text(f"Trace: {method} (").filter(has_text=f"{NEW} tokens in").first.wait_for(timeout=600_000)
    page.locator(".pd-player .pd-step-label").first.wait_for(timeout=60_000)
    return time.perf_counter() - t0


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


def outside(method: str, repeats: int) -> dict[str, list[float]]:
    runner = Runner("cpu", "float32")
    runner.target("embedded")
    runner.decode(Request("ar", PROMPT, {}, 4))  # warm-up
    params = presets.device_profile(presets.device_info("cpu")).params(method)  # what the app's live run uses
    times: dict[str, list[float]] = {method: [], "ar": []}
    for seed in range(repeats):
        for name, given in ((method, params), ("ar", {})):
            t0 = time.perf_counter()
            runner.decode(Request(name, PROMPT, given, NEW, seed=seed))
            times[name].append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", default="eagle3", choices=["eagle", "eagle2", "eagle3"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    app = in_app(a.method, a.repeats)
    cli = outside(a.method, a.repeats)
    both = [m + b for m, b in zip(cli[a.method], cli["ar"])]
    result = {"method": a.method, "new_tokens": NEW, "app_click_to_trace_s": [round(x, 2) for x in app],
              "runner_decode_s": {name: [round(x, 2) for x in xs] for name, xs in cli.items()},
              "ratio": round(statistics.median(app) / statistics.median(both), 2),
              "ratio_to_the_method_alone": round(statistics.median(app) / statistics.median(cli[a.method]), 2)}
    print(json.dumps(result))
    if a.out:
        from paradec.traces.files import write_atomic

        write_atomic(a.out, json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
