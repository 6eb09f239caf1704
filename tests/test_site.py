"""The static replay site (python -m paradec export-site): where it may be written (the refusals of --out), its one
script (the player and the quiz as plain functions), the same frames as the app's, and, in a real headless Chromium
with every request that is not a file aborted, two methods' pages in both languages: no page error, the player
advances, a predict question takes an answer, an exercise checks, and the accepted tokens shown at a step are the
trace's."""
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from paradec.site import export, payload
from paradec.site.method import link
from paradec.stage.extras import for_page
from paradec.stage.frames import Shell
from paradec.traces import files
from paradec.traces.trace import Trace
from paradec.words import Words

from helpers import cannot_run

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "assets" / "traces"
ONLY = "pld,medusa"  # two methods: a chain, and a tree with a page panel of its own
WAIT = 60_000  # ms: a page's first draw on a busy 2-core machine


def test_out_refuses_what_is_not_an_empty_folder_or_an_export(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(files.Refused, match="not empty and holds no previous export"):
        export.check_out(tmp_path)
    assert export.check_out(tmp_path, force=True) == tmp_path.resolve()
    with pytest.raises(files.Refused, match="not a folder"):
        export.check_out(tmp_path / "notes.txt")
    with pytest.raises(files.Refused, match="no such folder"):
        export.check_out(tmp_path / "missing" / "site")
    for inside in (ROOT, ROOT / "assets", ROOT / "assets" / "traces" / "site", ROOT / "paradec" / "web"):
        with pytest.raises(files.Refused, match="which the export reads"):
            export.check_out(inside, force=True)
    assert export.check_out(tmp_path / "new") == (tmp_path / "new").resolve()  # made when new
    again = tmp_path / "again"
    again.mkdir()
    (again / export.MARK).write_text('{"files": []}')
    (again / "index.html").write_text("an old export")
    assert export.check_out(again) == again.resolve()  # a previous export is written over


def test_writes_go_through_renames_and_never_through_links(tmp_path):
    out = tmp_path / "site"
    out.mkdir()
    (out / export.MARK).write_text(json.dumps({"files": ["old.html", str(Path("..", "escape.txt"))]}))
    (out / "old.html").write_text("stale")
    (tmp_path / "escape.txt").write_text("not the export's")
    export.write(out.resolve(), {"index.html": "<p>new</p>", "data/a.js": "PD.put('a','')\n"})
    assert (out / "index.html").read_text() == "<p>new</p>" and (out / "data" / "a.js").is_file()
    assert not (out / "old.html").exists() and (tmp_path / "escape.txt").read_text() == "not the export's"
    (tmp_path / "elsewhere.html").write_text("kept")
    os.symlink(tmp_path / "elsewhere.html", out / "page.html")
    with pytest.raises(files.Refused, match="a link"):
        export.write(out.resolve(), {"page.html": "x"})
    assert (tmp_path / "elsewhere.html").read_text() == "kept"


def test_the_bundle_holds_the_player_and_the_quiz_as_plain_functions():
    text = export.bundle()
    assert "export " not in re.sub(r"//.*", "", text) and text.startswith("(function () {")
    assert "function mountPlayer(component)" in text and "function mountQuiz(component)" in text


def test_the_site_shows_the_apps_frames():
    """The app's frame builder (ui.stage, in the visitor's language) and the site's data give the same frames."""
    from ui import stage

    trace = Trace.load(TRACES / "medusa-greedy.json")
    extra = for_page("medusa", trace)
    text = payload.player(trace, Shell(Words("en"), link("en"), True, extra), False)
    site = json.loads(text.split("\n", 1)[1])
    app = json.loads(stage.build(trace, "medusa", True, extra, 0, None)["frames"])
    assert len(app) == len(trace.steps) and site == app


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The export of two methods, both languages, written by the CLI: the folder."""
    out = tmp_path_factory.mktemp("site") / "out"
    run = subprocess.run([sys.executable, "-m", "paradec", "export-site", "--out", str(out), "--only", ONLY],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return out


@pytest.fixture(scope="module")
def browser():
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        cannot_run("chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=shutil.which("chromium") or shutil.which("chromium-browser"),
                               args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def opened(browser, site, path: str, left: list):
    """A page from file:// in a fresh context where any other request is aborted (and listed in `left`)."""
    context = browser.new_context(viewport={"width": 1024, "height": 768})

    def only_files(route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            left.append(route.request.url)
            route.abort()

    context.route("**/*", only_files)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"file://{site}/{path}")
    return page, errors


@pytest.mark.slow
def test_the_cli_refuses_a_bad_out_in_one_line(tmp_path):
    (tmp_path / "mine.txt").write_text("mine")
    run = subprocess.run([sys.executable, "-m", "paradec", "export-site", "--out", str(tmp_path)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1 and "--force" in run.stderr
    assert (tmp_path / "mine.txt").read_text() == "mine" and len(list(tmp_path.iterdir())) == 1


@pytest.mark.slow
@pytest.mark.serial  # a browser (or the export it reads): one at a time, see pytest.ini
def test_the_export_is_a_static_space(site):
    readme = (site / "README.md").read_text()
    assert "sdk: static" in readme and "app_file: index.html" in readme
    names = json.loads((site / export.MARK).read_text())["files"]
    assert {"index.html", "index.fr.html", "pld.html", "medusa.fr.html", "glossary.html", "static/plotly.min.js"} <= \
        set(names) and not any(n.startswith("sps") for n in names)
    html = "".join((site / n).read_text() for n in names if n.endswith(".html"))
    assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html  # every script local


@pytest.mark.slow
@pytest.mark.serial  # a browser (or the export it reads): one at a time, see pytest.ini
def test_every_page_opens_from_file_with_no_error_and_no_request(site, browser):
    left = []
    for path in sorted(p.name for p in site.glob("*.html")):
        page, errors = opened(browser, site, path, left)
        if path.split(".")[0] in ("pld", "medusa"):
            page.wait_for_function("document.querySelectorAll('.pd-fig .main-svg').length >= 2", timeout=WAIT)
            assert "medusa" not in path or page.locator(".pd-cell .pd-title").count() >= 4  # the heads' panel too
        else:
            page.wait_for_load_state("load")
            page.wait_for_timeout(300)
        assert errors == [], (path, errors)
        page.context.close()
    assert left == []


@pytest.mark.slow
@pytest.mark.serial  # a browser (or the export it reads): one at a time, see pytest.ini
def test_the_player_advances_and_shows_the_traces_accepted_tokens(site, browser):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    trace = Trace.load(TRACES / "pld-greedy.json")
    i = next(k for k, s in enumerate(trace.steps) if len(s.accepted) >= 2)
    page, errors = opened(browser, site, f"pld.html?trace=pld-greedy&step={i}", [])
    label = page.locator(".pd-step-label")
    page.wait_for_function("document.querySelector('.pd-step-label')?.textContent.startsWith('Step')", timeout=WAIT)
    assert label.text_content() == f"Step {i} of {len(trace.steps)}"
    page.keyboard.press("ArrowRight")  # the player's key: step i + 1 (1-based), the trace's step i
    assert label.text_content() == f"Step {i + 1} of {len(trace.steps)}"
    page.wait_for_function(f"location.search.includes('step={i + 1}')", timeout=WAIT)  # the link follows
    step = trace.steps[i]
    want = [trace.text_of(step.nodes[j].token).replace("\n", "↵") for j in step.accepted]
    highlighted = ("[...document.querySelectorAll(\".pd-html .pd-tok[style*='fff3bf']\")]"  # this step's
                   ".filter(t => t.dataset.tip.startsWith('accepted')).map(t => t.textContent)")
    # the stream redraws after the label on a loaded machine: wait (at most WAIT) for this step's highlight
    as_js = json.dumps(json.dumps(want, separators=(",", ":"), ensure_ascii=False))  # JSON.stringify's spelling
    with contextlib.suppress(PlaywrightTimeout):  # a wrong highlight then fails the comparison below, named
        page.wait_for_function(f"JSON.stringify({highlighted}) === {as_js}", timeout=WAIT)
    assert page.evaluate(highlighted) == want
    assert errors == []
    page.context.close()


@pytest.mark.slow
@pytest.mark.serial  # a browser (or the export it reads): one at a time, see pytest.ini
def test_predict_mode_asks_and_takes_an_answer_in_both_languages(site, browser):
    for path, word in (("pld.html?predict=1", "Predict"), ("medusa.fr.html?predict=1", "Prédisez")):
        page, errors = opened(browser, site, path, [])
        page.wait_for_selector(".pd-ask:not([hidden]) .pd-q", timeout=WAIT)
        assert page.locator(".pd-ask .pd-q").first.text_content().startswith(word)
        page.locator(".pd-ask button.pd-choice").first.click()
        page.wait_for_selector(".pd-ask[data-answered='1'] .pd-score[data-asked='1']", timeout=WAIT)
        assert errors == []
        page.context.close()
    page, errors = opened(browser, site, "pld.html", [])
    page.wait_for_function("document.querySelectorAll('.pd-fig .main-svg').length >= 2", timeout=WAIT)
    assert page.locator(".pd-player .pd-ask:not([hidden])").count() == 0  # without the parameter: no question
    page.context.close()


@pytest.mark.slow
@pytest.mark.serial  # a browser (or the export it reads): one at a time, see pytest.ini
def test_an_exercise_checks_in_the_browser(site, browser):
    page, errors = opened(browser, site, "medusa.html", [])
    item = page.locator(".pd-ex").filter(has=page.locator("input")).first
    item.wait_for(timeout=WAIT)
    given = json.loads(page.locator("#pd-page").text_content())["exercises"]
    answer = next(e for e in given if e["id"] == item.get_attribute("data-id"))["answer"]
    item.locator("input").fill("-12345")
    item.locator("button.pd-check").click()
    assert item.get_attribute("data-tries") == "1" and "pd-bad" in item.locator(".pd-ex-out").get_attribute("class")
    item.locator("input").fill(str(answer))
    item.locator("button.pd-check").click()
    assert item.get_attribute("data-solved") == "1"
    assert errors == []
    page.context.close()
