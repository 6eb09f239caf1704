"""The app in a real headless Chromium (tools/ui_check.py, the repository's own page checker), one browser
for every size: every page opens with no exception box and no console error at a projector's 1024x768 (a method
page shows its Play button and the step's drawing on its first screen), at 1920x1080 and at a phone's 390x844
(nothing wider than the screen, every button 44 px or taller), ends with its "Next:" link, no text is cut by its
box or under 11 px, and no chart text is under 11 px as drawn, cut by its chart, plot area or legend, or over other
chart text, nor a legend over a title;
on every page with a player it keeps 3.5 of 4 steps/s with its figures in view, its step text equals its
scrubber, and the details follow it (tests/ui_page_checks.js). The first request to each fresh server is a
deep link; a page of each kind is opened first on a server of its own, and every page in French (?lang=fr),
where its title and the sidebar's are the catalogue's French; switching the language keeps the page and the
step. In presenter mode (?present=1), in French (the longer text), every method page passes the same checks on
a 1024x768 projector, fits in three of its screens and shows its French title. Every check includes the badges'
contrast (4.5:1)."""
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import cannot_run

# Each starts the app and a browser: they run one at a time (pytest.ini's serial), never beside another browser,
# which took the frames of the player they time (steps/s).
pytestmark = [pytest.mark.slow, pytest.mark.serial]

ROOT = Path(__file__).resolve().parents[1]
UI_CHECK = ROOT / "tools" / "ui_check.py"
PAGES = {"/", "/ar", "/sps", "/pld", "/jacobi", "/lookahead", "/medusa", "/eagle", "/early_exit", "/mirror",
         "/arena", "/roofline", "/benchmark", "/tune", "/numerics", "/production", "/glossary", "/article"}
SWITCH = "/jacobi"  # the page where the test switches the language back to English
# A server's first request, one kind of page each (a player, the home page, a page of figures, one of text): a
# first request failed by the kind of page, not by the page (a player's before app.py had run); a server costs
# seconds of CPU to start, a page on a running one a fraction of that, so the others come after.
FIRSTS = (SWITCH, "/", "/roofline", "/glossary")
PLAYERS = {"/ar", "/sps", "/pld", "/jacobi", "/lookahead", "/medusa", "/eagle", "/early_exit", "/mirror"}


def test_the_pages_checked_are_the_apps():
    from ui import guide

    assert PAGES == {f"/{path}" for path in guide.pages()} and PLAYERS < PAGES


def _missing() -> str | None:
    if importlib.util.find_spec("playwright") is None:
        return "python package playwright is not installed (pip install playwright; no browser download)"
    if not any(shutil.which(c) for c in ("chromium", "chromium-browser")):
        return "chromium is not installed (apt-get install chromium); .ci/run installs it"
    return None


def _check(tmp_path, *args: str, timeout: int = 500) -> dict:
    """tools/ui_check.py on a fresh server with the page checks; its summary, asserted free of problems."""
    why = _missing()
    if why:
        cannot_run(why)
    cmd = [sys.executable, str(UI_CHECK), str(ROOT / "app.py"), "--python", sys.executable, "--cwd", str(ROOT),
           "--out", str(tmp_path), "--width", "1024", "--height", "768", "--page-js",
           str(ROOT / "tests" / "ui_page_checks.js"), "--page-timeout", "90", "--total-timeout", str(timeout), *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 100)
    summary = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}
    problems = summary.get("problems", ["no summary"])
    assert not problems and "error" not in summary, problems or summary.get("error") or r.stderr[-3000:]
    return summary


def _base(path: str) -> str:
    return path.split("?")[0]


def _both_sizes(tmp_path, first: str, pages: set[str]) -> list[dict]:
    """Every page of `pages` at 1024x768, 1920x1080 and a phone's 390x844, `first` (a deep link to one of them)
    first; each page's result and its other sizes'."""
    rest = sorted(pages - {_base(first)})
    summary = _check(tmp_path, "--first", first, "--pages", ",".join(rest), "--also-size", "1920x1080",
                     "--also-size", "390x844", "--expect", "Next:")
    assert pages == {_base(p["path"]) for p in summary["pages"]}
    shots = [s for p in summary["pages"] for s in [p["screenshot"], *(x["screenshot"] for x in p["sizes"])]]
    assert all(Path(s["path"]).stat().st_size > 10_000 for s in shots)  # something drawn
    return summary["pages"]


def test_every_method_page_in_chromium_at_both_sizes(tmp_path):
    # The first request to the fresh server is a classroom link deep into a page (it crashed when Streamlit
    # served a pages/ folder by itself before app.py had run).
    pages = _both_sizes(tmp_path, "/jacobi?step=3", PLAYERS)
    widest = [x for p in pages for x in p["sizes"] if x["size"] == "1920x1080"]  # where the player draws the most
    assert len(widest) == len(PLAYERS)
    assert all(x["js"]["info"]["moved"] >= 3 and x["js"]["info"]["rate"] >= 3.5 for x in widest)  # each was played
    assert next(p for p in pages if _base(p["path"]) == "/sps")["js"]["info"]["replaced"]  # a new trace, then details


def test_every_other_page_in_chromium_at_both_sizes(tmp_path):
    _both_sizes(tmp_path, "/roofline", PAGES - PLAYERS)


def test_method_pages_in_presenter_mode_fit_three_projector_screens(tmp_path):
    """Presenter mode passes every check on the projector it is for (1024x768; the other sizes are the pages'
    own, checked without it), and a method page fits three of its screens; in French, its title the catalogue's."""
    from ui.i18n import catalogue

    first = "/eagle?present=1&step=3&lang=fr"
    pages = [f"{p}?present=1&lang=fr" for p in sorted(PLAYERS - {_base(first)})]
    summary = _check(tmp_path, "--first", first, "--pages", ",".join(pages), timeout=500)
    shown = {_base(p["path"]): p["js"]["info"] for p in summary["pages"]}
    assert set(shown) == PLAYERS
    assert all(0 < info["screens"] <= 3 and info["rate"] >= 3.5 for info in shown.values()), shown
    french = set(catalogue("fr").values())
    assert all(info["title"] in french for info in shown.values()), shown  # each page's own title, in French


def _fresh_server(port: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port),
                             "--server.address", "127.0.0.1"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def _first_view(browser, base: str, path: str, switch: bool = False) -> dict:
    """What a visitor sees when `path` is the server's first request: exceptions, title, sidebar links; with
    switch, what the same page shows after a click on English in the sidebar (and the URL it keeps)."""
    page = browser.new_page(viewport={"width": 1024, "height": 768})
    try:
        page.goto(base + path)
        if switch:  # the player has drawn its step
            page.locator("[data-step]").first.wait_for(timeout=90_000)
        seen = _view(page)
        if switch:
            page.get_by_text("English", exact=True).click()
            page.wait_for_function(f"document.querySelector('h1')?.innerText !== {json.dumps(seen['title'])}",
                                   timeout=60_000)
            seen["switched"] = {**_view(page), "url": page.url}
        return seen
    finally:
        page.close()


def _view(page) -> dict:
    page.locator("h1, [data-testid='stException']").first.wait_for(timeout=90_000)
    page.wait_for_function("!document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=90_000)
    return page.evaluate("""() => ({
        exceptions: [...document.querySelectorAll('[data-testid="stException"]')].map(e => e.innerText),
        title: document.querySelector('h1')?.innerText || '',
        step: document.querySelector('[data-step]')?.dataset.step || '',
        links: [...document.querySelectorAll('[data-testid="stSidebarNav"] a')]
               .map(a => a.innerText.trim().split('\\n').pop())})""")  # the title, under its icon's name


def test_every_page_opened_first_on_a_fresh_server_in_french():
    """A classroom link after a restart (or a Space waking up) is a fresh server's first request: each kind of
    page, on its own new server, and then every other page without a player (the method pages are opened in French
    in presenter mode), draws in French with its title, no exception, and the sidebar's page titles (not files); a
    click on English redraws the same page at the same step."""
    why = _missing()
    if why:
        cannot_run(why)
    from playwright.sync_api import sync_playwright

    from ui.i18n import catalogue

    sys.path.insert(0, str(UI_CHECK.parent))
    from ui_check import free_port, wait_health

    french = catalogue("fr")
    titles = {french[t] for t in ("Home", "Autoregressive (AR)", "Speculative sampling", "Jacobi decoding")}
    seen, rest = {}, sorted(PAGES - PLAYERS - set(FIRSTS))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium") or shutil.which("chromium-browser"),
                                    args=["--no-sandbox", "--headless"])
        servers = {path: (port := free_port(), _fresh_server(port)) for path in FIRSTS}  # they start at once
        try:
            for path, (port, _) in servers.items():
                wait_health(f"http://127.0.0.1:{port}", None, 90)
                query = "?lang=fr&step=3" if path == SWITCH else "?lang=fr"
                seen[path] = _first_view(browser, f"http://127.0.0.1:{port}", path + query, path == SWITCH)
            ports = [port for port, _ in servers.values()]
            for k, path in enumerate(rest):  # the other pages, each a later request on one of those servers
                seen[path] = _first_view(browser, f"http://127.0.0.1:{ports[k % len(ports)]}", path + "?lang=fr")
        finally:
            for _, server in servers.values():
                server.terminate()
                server.wait(30)
    bad = {path: v for path, v in seen.items() if v["exceptions"] or not v["title"] or not titles <= set(v["links"])}
    assert set(seen) == PAGES - PLAYERS | set(FIRSTS) and not bad, bad
    english = [v["title"] for v in seen.values() if v["title"] not in french.values()]
    assert not english, english  # every page's own title is the catalogue's French
    back = seen[SWITCH]["switched"]
    assert back["title"] in french and not back["exceptions"], back  # the English title of the French one
    assert SWITCH + "?" in back["url"] and "step=3" in back["url"] and "lang" not in back["url"], back["url"]
    assert back["step"] == "3" and seen[SWITCH]["step"] == "3"
