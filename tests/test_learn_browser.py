"""Predict mode, the exercises and the class vote in a real headless Chromium at 1024x768, on one app server and
one browser for every check: /sps?predict=1 asks before the first verify is shown, takes an answer, reveals it
and scores one question asked; /eagle?predict=1&lang=fr asks in French; /sps asks nothing; a presenter and three
students (390 px wide, no horizontal scroll) vote, the presenter sees the three votes before the reveal, a wrong
code gets its message; the exercises of two pages are answered wrong (a hint) and right in the browser."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from paradec.learn import exercises

from helpers import cannot_run

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # a browser: one at a time (pytest.ini's serial)

ROOT = Path(__file__).resolve().parents[1]
WAIT = 90_000  # ms: a page's first draw on a busy 2-core machine


@pytest.fixture(scope="module")
def app():
    """One app server and one browser for the module: (base url, browser)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        cannot_run("chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT / "tools"))
    from ui_check import free_port, wait_health

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port",
                               str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
                               "--browser.gatherUsageStats", "false"], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_health(base, None, 90)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--headless"])
            yield base, browser
            browser.close()
    finally:
        server.terminate()
        server.wait(30)


def _page(browser, url: str, width: int = 1024, height: int = 768):
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.errors = errors
    return page


def _player(page) -> None:
    page.locator("[data-step]").first.wait_for(timeout=WAIT)
    page.wait_for_function("!document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=WAIT)


def test_sps_asks_before_the_verify_then_reveals_and_scores(app):
    base, browser = app
    page = _page(browser, f"{base}/sps?predict=1")
    _player(page)
    ask = page.locator(".pd-ask")
    ask.wait_for(timeout=WAIT)
    assert ask.locator(".pd-q").inner_text().startswith("Predict")
    story = page.locator(".pd-story").inner_text()
    assert "What will it keep?" in story and "checked them" not in story  # the verify pass is not shown yet
    assert page.evaluate("document.body.dataset.pdAsking") == "sps"  # the details under the player are veiled
    page.locator("button.pd-choice").first.click()
    page.wait_for_function("document.querySelector('.pd-ask').dataset.answered === '1'", timeout=10_000)
    assert "checked them" in page.locator(".pd-story").inner_text()  # revealed
    score = page.locator(".pd-score")
    assert score.get_attribute("data-asked") == "1" and score.get_attribute("data-session-asked") == "1"
    assert " of 1 predicted right" in score.inner_text() and page.locator(".pd-why").inner_text()
    assert page.evaluate("document.body.dataset.pdAsking") is None and not page.errors
    _exercises(page, "sps")


def _exercises(page, name: str) -> None:
    """Each exercise of the page answered wrong (a hint, not the answer), then right (solved)."""
    for e in exercises.for_page(name, ROOT / "assets"):
        item = page.locator(f".pd-ex[data-id='{e['id']}']")
        item.scroll_into_view_if_needed(timeout=WAIT)
        if e["kind"] == "choice":
            item.locator("button.pd-choice").nth((e["answer"] + 1) % len(e["choices"])).click()
            assert item.get_attribute("data-tries") == "1" and "Hint:" in item.inner_text()
            item.locator("button.pd-choice").nth(e["answer"]).click()
        else:
            item.locator("input").fill(f"{e['answer'] + 10 * e['tolerance'] + 1:.2f}")
            item.locator(".pd-check").click()
            assert item.get_attribute("data-tries") == "1" and "Hint:" in item.inner_text()
            item.locator("input").fill(f"{e['answer']:.2f}".replace(".", ","))  # a decimal comma is fine
            item.locator(".pd-check").click()
        assert item.get_attribute("data-solved") == "1", e["id"]


def test_eagle_asks_in_french(app):
    base, browser = app
    page = _page(browser, f"{base}/eagle?predict=1&lang=fr")
    _player(page)
    page.locator(".pd-ask .pd-q").wait_for(timeout=WAIT)
    assert page.locator(".pd-ask .pd-q").inner_text().startswith("Prédisez") and not page.errors


def test_without_the_flag_sps_asks_nothing(app):
    base, browser = app
    page = _page(browser, f"{base}/sps")
    _player(page)
    page.wait_for_timeout(500)
    assert page.locator(".pd-ask").is_hidden() and "checked them" in page.locator(".pd-story").inner_text()


def test_jacobi_exercises_in_the_browser(app):
    base, browser = app
    page = _page(browser, f"{base}/jacobi")
    page.locator(".pd-ex").first.wait_for(timeout=WAIT)
    _exercises(page, "jacobi")
    assert not page.errors


def test_a_class_votes_from_three_phones_before_the_reveal(app):
    base, browser = app
    presenter = _page(browser, f"{base}/sps?present=1&predict=1")
    _player(presenter)
    presenter.get_by_role("button", name=re.compile("Class vote")).click()
    presenter.get_by_role("button", name=re.compile("Open a class")).click()
    code = presenter.locator(".pd-qr").get_attribute("data-code", timeout=WAIT)
    presenter.keyboard.press("Escape")
    students = []
    for k in range(3):
        s = _page(browser, f"{base}/vote?room={code}", 390, 844)
        s.get_by_role("button", name=re.compile(r"^A\. ")).wait_for(timeout=WAIT)
        s.get_by_role("button", name=re.compile(r"^[AB]\. ")).nth(k % 2).click()
        students.append(s)
    presenter.wait_for_function("document.querySelector('.pd-tally')?.dataset.total === '3'", timeout=30_000)
    tally = presenter.locator(".pd-tally").inner_text()
    assert "3 answered" in tally and re.search(r"A ▮▮ 2 · B ▮ 1", tally), tally  # the spread, before the reveal
    assert presenter.locator(".pd-ask").get_attribute("data-answered") == "0"
    for s in students:
        assert s.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    wrong = _page(browser, f"{base}/vote?room=ZZZZ22", 390, 844)
    wrong.locator("[data-testid='stAlertContentError']").wait_for(timeout=WAIT)
    assert "No open class has the code ZZZZ22" in wrong.locator("[data-testid='stAlertContentError']").inner_text()
    presenter.locator(".pd-reveal").click()
    students[0].wait_for_function("document.body.innerText.includes('✓')", timeout=30_000)
    assert not any(p.errors for p in [presenter, *students, wrong])
