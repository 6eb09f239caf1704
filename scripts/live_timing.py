"""How long a live run takes in the app, click to trace, against the same decode through Runner.decode.

    python scripts/live_timing.py [--method eagle3] [--repeats 3] [--out FILE]

Starts the app on a free port, opens the EAGLE page in headless Chromium in live mode, and for each repeat
clicks "Run live" (a new seed each time, so nothing is cached; greedy, so the tokens are the same) and
times until the page shows the live trace. Then, in this process, it times the same request through
paradec.runner.Runner.decode (the model loaded first, untimed). Prints one JSON line: the medians and
their ratio. Run it on a quiet machine: both sides share the cores with nothing else."""
from __future__ import annotations

import argparse
import json
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
    page.wait_for_timeout(1000)  # the page settled
    t0 = time.perf_counter()
    button.click()
    page.get_by_text(f"Trace: {method} (").filter(has_text=f"{NEW} tokens in").first.wait_for(timeout=600_000)
    page.locator(".pd-player .pd-step-label").first.wait_for(timeout=60_000)
    return time.perf_counter() - t0


def outside(method: str, repeats: int) -> list[float]:
    runner = Runner("cpu", "float32")
    runner.target("embedded")
    runner.decode(Request("ar", PROMPT, {}, 4))  # warm-up
    times = []
    for seed in range(repeats):
        t0 = time.perf_counter()
        runner.decode(Request(method, PROMPT, {}, NEW, seed=seed))
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", default="eagle3", choices=["eagle", "eagle2", "eagle3"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    app = in_app(a.method, a.repeats)
    cli = outside(a.method, a.repeats)
    result = {"method": a.method, "new_tokens": NEW, "app_click_to_trace_s": [round(x, 2) for x in app],
              "runner_decode_s": [round(x, 2) for x in cli],
              "ratio": round(statistics.median(app) / statistics.median(cli), 2)}
    print(json.dumps(result))
    if a.out:
        from paradec.files import write_atomic

        write_atomic(a.out, json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
