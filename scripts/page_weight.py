"""How heavy a page is for the browser that opens it: the main thread's work until the page is ready (Chromium's own
TaskDuration, from its Performance domain), the DOM's size and the bytes it fetched (of a static site's page, also
those beyond the bundle its pages share: kb_page_data), for the app's pages or the static site's. The tables in
docs/app.md and docs/static.md come from here.

    python scripts/page_weight.py --app                  # starts the app, measures every page (1024x768)
    python scripts/page_weight.py --url file:///tmp/site --paths index.html,sps.html

A page is ready when the network has been quiet for half a second and, on a page with a step player, the player
has drawn its figures. Each page opens in a fresh browser context (nothing cached), once to warm the server's own
caches, then measured. The machine's other work slows the main thread too: measure on a quiet machine, and compare
pages within one run."""
from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run"]
READY = """() => {
  const player = document.querySelector('.pd-player');
  if (!player) return true;
  // a box predict mode veils waits for the answer: it is drawn after it
  const boxes = player.querySelectorAll('.pd-cell:not(.pd-veil) > .pd-fig');
  return [...boxes].every((box) => box.querySelector('.main-svg'));
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(browser, url: str, width: int, height: int, settle: int = 500) -> dict:
    """One page in a fresh context: main-thread work (ms), DOM nodes, bytes fetched, and seconds until ready."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    fetched = []
    page.on("response", lambda r: fetched.append((r.url, int(r.headers.get("content-length") or 0))))
    cdp = context.new_cdp_session(page)
    cdp.send("Performance.enable")
    t0 = time.monotonic()
    page.goto(url, wait_until="networkidle", timeout=120_000)
    page.wait_for_function(READY, timeout=120_000)
    page.wait_for_timeout(settle)
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    out = {"main_thread_ms": round(metrics["TaskDuration"] * 1000),
           "script_ms": round(metrics["ScriptDuration"] * 1000),
           "dom_nodes": int(metrics["Nodes"]), "kb_fetched": round(sum(size(u, n) for u, n in fetched) / 1024),
           "kb_page_data": round(sum(size(u, n) for u, n in fetched if not shared(u)) / 1024) if url.startswith(
               "file:") else None,
           "ready_s": round(time.monotonic() - t0, 2)}
    context.close()
    return out


def size(url: str, length: int) -> int:
    """A response's bytes: its content-length, or for a file:// page the file's size (no header there)."""
    if url.startswith("file://"):
        path = Path(urllib.parse.unquote(urllib.parse.urlparse(url).path))
        return path.stat().st_size if path.is_file() else 0
    return length


def shared(url: str) -> bool:
    """The static site's bundle, which every page shares (static/: plotly.js, the player, the style sheet)."""
    return url.startswith("file://") and "/static/" in url


def app_paths() -> list[str]:
    from ui import guide

    return ["/" + url for url in guide.pages()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--app", action="store_true", help="start the app and measure its pages")
    ap.add_argument("--url", help="a base URL (an app already running, or a static site)")
    ap.add_argument("--paths", help="comma-separated paths under the base (default: every page of the app)")
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--height", type=int, default=768)
    ap.add_argument("--settle", type=int, default=500, help="ms after ready before the work is read (its idle "
                    "chores included: a player drawing stills ahead)")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args(argv)
    if not (args.app or args.url):
        ap.error("give --app or --url")
    server, base = None, (args.url or "").rstrip("/")
    if args.app:
        port = free_port()
        server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port",
                                   str(port), "--server.address", "127.0.0.1"], cwd=ROOT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        time.sleep(5)
    paths = args.paths.split(",") if args.paths else app_paths()
    rows = []
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
            for path in paths:
                url = f"{base}/{path.lstrip('/')}"
                if server:
                    measure(browser, url, args.width, args.height)  # the server's caches warm, as for a class
                rows.append({"page": path, **measure(browser, url, args.width, args.height, args.settle)})
                print(json.dumps(rows[-1]), flush=True)
            browser.close()
    finally:
        if server:
            server.terminate()
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
