"""Hostile input to the app (issue 16), with Streamlit's AppTest: odd but legal imported traces are
drawn within bounded time, what still cannot be drawn is an error box on a page that keeps
working; links and visitors cannot pick the backend, a model, a draft or weights the operator did
not list (ui/operator.py); classroom links that are too long or nonsense are ignored."""
from __future__ import annotations

import json
import time

import pytest
from streamlit.testing.v1 import AppTest

from hostile_traces import ODD, build
from paradec.trace import Trace
from ui import sources

APP = "../app.py"


def page_of(method: str) -> tuple[str, dict]:
    if method.startswith("eagle"):
        return "pages/eagle.py", {"version": method}
    return f"pages/{method}.py", {}


def opened(method: str, trace: Trace | None = None, **query) -> AppTest:
    page, extra = page_of(method)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({**extra, **query})
    at.run()
    if trace is not None:
        at.session_state[sources.IMPORTED] = {method: trace}
    return at.switch_page(page).run()


def errors(at: AppTest) -> list[str]:
    return [e.value for e in at.exception]


@pytest.mark.parametrize("name", ODD)
def test_an_odd_trace_is_drawn_in_bounded_time(name):
    method, data = build(ODD, name)
    trace = sources.import_trace(data)
    t0 = time.perf_counter()
    at = opened(method, trace)
    assert not errors(at) and not at.error, errors(at) + [e.value for e in at.error]
    for step in sorted({min(2, len(trace.steps)), len(trace.steps)} - {1}):  # the odd steps are the first two
        at.slider(key=f"{method}.step").set_value(step).run()
        assert not errors(at) and not at.error, errors(at) + [e.value for e in at.error]
    sim = [b for b in at.button if b.label.startswith("Sample this step")]
    if sim:
        sim[0].click().run()
        assert not errors(at) and not at.error
    assert time.perf_counter() - t0 < 30


def test_what_slips_past_the_loader_is_an_error_box_and_the_app_keeps_working():
    """A trace object no file could make (the loader refuses it): the page shows an error box, its
    player's drop button still works, and the other pages are untouched."""
    _, data = build(ODD, "unknown extras")
    trace = Trace.from_json(data)
    trace.steps[0].extras["block"] = "not a list"  # what the Jacobi page draws from
    trace.method = "jacobi"
    at = opened("jacobi", trace)
    assert not errors(at) and any("cannot be drawn" in e.value for e in at.error)
    at.button(key="jacobi.drop").click().run()
    assert not errors(at) and not at.error and "Play" in [b.label for b in at.button]
    at.switch_page("pages/pld.py").run()
    assert not errors(at) and not at.error


LINKS = [  # classroom links a visitor can craft: ignored or clamped, never an exception
    {"prompt": "x" * 100_000}, {"params": json.dumps({"k": "x" * 10_000})}, {"params": "{" * 10_000},
    {"params": json.dumps({"heads": "/etc/passwd", "k": 4})}, {"params": "[1, 2]"}, {"params": "null"},
    {"step": "-5"}, {"step": "99999999999999999999"}, {"step": "nan"}, {"temperature": "nan"},
    {"temperature": "-inf"}, {"top_p": "1e-300"}, {"seed": "1e400"}, {"max_new": "9" * 500}, {"source": "evil"},
    {"trace": "../../../../etc/passwd"}, {"trace": "\x00"}, {"model": "nobody/nothing"},
    {"model": "/etc"}, {"backend": "http://169.254.169.254/latest/meta-data"},
]


@pytest.mark.parametrize("query", LINKS, ids=range(len(LINKS)))
def test_a_crafted_link_is_ignored_or_clamped(query):
    at = opened("pld", **query)
    assert not errors(at), errors(at)
    s = at.session_state["_settings"]
    assert s.model == "embedded" and s.backend == "" and 0 <= s.temperature <= 1.5 and s.top_p >= 0.05
    assert len(s.prompt) <= 2000
