"""Hostile input to the app, with Streamlit's AppTest: odd but legal imported traces are
drawn within bounded time, what still cannot be drawn is an error box on a page that keeps
working; links and visitors cannot pick the backend, a model, a draft or weights the operator did
not list (ui/offered.py); classroom links that are too long or nonsense are ignored."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from streamlit.runtime.scriptrunner_utils.exceptions import StopException
from streamlit.testing.v1 import AppTest
from test_serve import start, tiny  # noqa: F401 (fixtures: a loopback service on the tiny model)

from paradec import catalog
from paradec.core import records
from paradec.traces import trace_check
from paradec.traces.trace import Trace, TraceError
from ui import offered, remote, sources

from helpers import APP, go_to, player, slowed
from hostile_traces import ODD, build

# make test only: AppTest runs of whole pages with hostile inputs
pytestmark = pytest.mark.slow


def page_of(method: str) -> tuple[str, dict]:
    if method.startswith("eagle"):
        return "views/eagle.py", {"version": method}
    return f"views/{method}.py", {}


def opened(method: str, imported: Trace | None = None, **query) -> AppTest:
    page, extra = page_of(method)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({**extra, **query})
    at.run()
    if imported is not None:
        at.session_state[sources.IMPORTED] = {method: imported}
    return at.switch_page(page).run()


def errors(at: AppTest) -> list[str]:
    return [e.value for e in at.exception]


# Seconds each: the slow tier draws these; the fast tier keeps one odd trace per kind of oddity
# (sampled fields missing, a negative seed, a schema-1 file).
BIG = {"a 256-node chain", "2,048 steps", "a window of 256 cells", "greedy tested nodes without p or q",
       "medusa with no head_top", "eagle without drafted"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n in BIG else []) for n in ODD])
def test_an_odd_trace_is_drawn_and_scrubbed(name):
    method, data = build(ODD, name)
    trace, _ = sources.import_trace(data)  # within the loader's drawing limits (the budget tests below)
    at = opened(method, trace)
    assert not errors(at) and not at.error, errors(at) + [e.value for e in at.error]
    for step in sorted({min(2, len(trace.steps)), len(trace.steps)} - {1}):  # the odd steps are the first two
        go_to(at, method, step)
        assert not errors(at) and not at.error, errors(at) + [e.value for e in at.error]
    sim = [b for b in at.button if b.label.startswith("Sample this step")]
    if sim:
        sim[0].click().run()
        assert not errors(at) and not at.error


def test_what_slips_past_the_loader_is_an_error_box_and_the_app_keeps_working():
    """A trace object no file could make (the loader refuses it): the page shows an error box, its
    player's drop button still works, and the other pages are untouched."""
    _, data = build(ODD, "a 256-node chain")
    trace = Trace.from_json(data)
    trace.steps[0].record = records.Jacobi(block="not a list", changed=[])  # what the Jacobi page draws from
    trace.method = "jacobi"
    at = opened("jacobi", trace)
    assert not errors(at) and any("cannot be drawn" in e.value for e in at.error)
    at.button(key="jacobi.drop").click().run()
    assert not errors(at) and not at.error and player(at, "jacobi")["frames"]
    at.switch_page("views/pld.py").run()
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


# ---------------------------------------------------------------- what a visitor may pick: the operator's lists

def live(**sidebar) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["sb.source"] = "live"
    for name, value in sidebar.items():
        at.session_state[f"sb.{name}"] = value
    return at.run()


@pytest.mark.parametrize("draft", ["/etc/passwd", "../../../../etc/passwd", "nobody/nothing", "trained:/etc",
                                   "self:1; rm -rf /", "http://169.254.169.254/"])
def test_a_typed_draft_the_operator_did_not_offer_is_refused_unread(draft):
    at = live()
    at.switch_page("views/sps.py").run()
    at.text_input(key="sps.draft").input(draft).run()
    assert not errors(at) and any("is not offered here" in e.value for e in at.error), [e.value for e in at.error]
    assert player(at, "sps")["frames"]  # the recorded trace is still replayed


@pytest.mark.parametrize("model", ["/etc", "nobody/nothing", "../../models"])
def test_a_model_the_operator_did_not_offer_is_never_used(model):
    at = live(model=model)
    at.switch_page("views/ar.py").run()
    assert not errors(at) and at.session_state["_settings"].model == "embedded"


def test_a_model_the_operator_offers_can_be_picked_and_linked(monkeypatch):
    monkeypatch.setenv(offered.MODELS, "org/offered-model, /srv/models/other")
    at = opened("pld", model="/srv/models/other")
    assert at.session_state["_settings"].model == "/srv/models/other"
    assert offered.models() == ["embedded", "org/offered-model", "/srv/models/other"]


def test_the_backend_is_the_operators_and_no_widget_or_link_changes_it(monkeypatch):
    monkeypatch.setenv(offered.BACKEND, "http://gpu-box:8765/")
    at = opened("pld", backend="http://169.254.169.254/")
    assert at.session_state["_settings"].backend == "http://gpu-box:8765"
    assert "sb.backend" not in [w.key for w in at.text_input]
    for typo in ("file:///etc/passwd", "gpu-box:8765", "http://"):  # the operator's typo: runs stay here
        monkeypatch.setenv(offered.BACKEND, typo)
        with pytest.raises(offered.Refused, match=offered.BACKEND):
            offered.backend()
        at = opened("pld")
        assert not errors(at) and at.session_state["_settings"].backend == ""


def test_weights_in_a_run_must_be_offered(monkeypatch):
    monkeypatch.setenv(offered.WEIGHTS, "/srv/heads")
    offered.check_weights({"heads": "/srv/heads"})
    for value in ("/etc/passwd", "nobody/nothing", "/srv/heads/../../etc"):
        with pytest.raises(offered.Refused, match="not offered here"):
            offered.check_weights({"heads": value})
    with pytest.raises(offered.Refused):
        offered.check_draft("self:1x")
    offered.check_draft("self:12")
    offered.check_draft("/hub/draft", fetched=["/hub/draft"])  # fetched from a GPU preset (the code's list)


@pytest.mark.serial  # on a clock: a busy machine could stretch the wait past the deadlines
def test_a_visitor_who_leaves_a_backend_run_frees_its_place(start, tiny):
    url, service = start(2)
    lane = service.runner.lane(tiny.name)

    def leaves(fraction, text=None):  # Streamlit stops a script this way when its tab closes
        if lane.status()["running"]:
            raise StopException

    t0 = time.perf_counter()
    with slowed(tiny, 0.05):  # 400 steps: 20 s if not cancelled
        with pytest.raises(StopException):
            remote.run(url, {"method": "ar", "prompt": "hi", "max_new_tokens": 400}, leaves)
        assert time.perf_counter() - t0 < 10  # the page did not wait for the answer
        end = time.perf_counter() + 8
        while lane.status()["running"] and time.perf_counter() < end:
            time.sleep(0.02)
        assert not lane.status()["running"]  # the backend cancelled the run


def test_uploads_are_capped_by_the_server_at_the_trace_cap():
    import tomllib
    from pathlib import Path

    from paradec.traces.trace import MAX_TRACE_BYTES

    server = tomllib.loads((Path(__file__).resolve().parents[1] / ".streamlit" / "config.toml").read_text())["server"]
    assert server["maxUploadSize"] * 2**20 <= sources.MAX_UPLOAD <= MAX_TRACE_BYTES


# ---------------------------------------------------------------- what a page draws of an upload: bounded

def chains(nodes: int, steps: int, accepted: bool = False) -> bytes:
    """steps steps of the recorded sps trace, each drafting an n-node chain (all accepted, or never tested)."""
    d = json.loads((sources.TRACE_DIR / "sps-greedy.json").read_text())
    last = d["steps"][0]["tokens"][-1]
    chain = [{"token": 5, "parent": j - 1, "depth": j + 1, "status": "accepted" if accepted else "unreached"}
             for j in range(nodes)]
    kept = list(range(nodes)) if accepted else []
    d["steps"] = [dict(d["steps"][0], index=i, nodes=chain, accepted=kept, tokens=[5] * len(kept) + [last],
                       origins=["accepted"] * len(kept) + ["bonus" if accepted else "target"]) for i in range(steps)]
    return json.dumps(d).encode()


@pytest.mark.parametrize("nodes, steps, accepted, limit", [(256, 80, False, "mask cells"),
                                                           (15, 400, True, "committed tokens")])
def test_an_upload_past_the_drawing_budget_is_cut_to_its_first_steps(nodes, steps, accepted, limit):
    """80 steps of a 256-node chain took the sps page 111 s and 4 GB: a page now draws at most
    MAX_MASK_CELLS mask cells and MAX_TOKENS committed tokens of one trace, and says where it cut."""
    trace, note = sources.import_trace(chains(nodes, steps, accepted))
    n = len(trace.steps)
    assert 1 <= n < steps and f"first {n} of its {steps} steps" in note
    assert sum(map(trace_check.mask_cells, trace.steps)) <= trace_check.MAX_MASK_CELLS
    assert len(trace.token_ids) <= trace_check.MAX_TOKENS
    one_more = trace_check.mask_cells(trace.steps[0]) if limit == "mask cells" else nodes + 1
    assert (sum(map(trace_check.mask_cells, trace.steps)) + one_more > trace_check.MAX_MASK_CELLS
            or len(trace.token_ids) + one_more > trace_check.MAX_TOKENS)  # cut at the limit, not before
    assert trace.wall_s == pytest.approx(Trace.from_json(chains(nodes, steps, accepted)).wall_s * n / steps)


def test_the_limits_keep_the_worst_upload_within_the_measured_budget():
    """The limits' worst case for the sps page (6 steps of 256-node chains, 398k mask cells) measured 3.4 s of
    CPU and under 400 MB; a file past MAX_UPLOAD (about 2 s to parse) is refused unread."""
    trace, note = sources.import_trace(chains(256, 6))
    assert note is None and len(trace.steps) == 6
    assert sum(map(trace_check.mask_cells, trace.steps)) <= trace_check.MAX_MASK_CELLS <= 400_000
    assert trace_check.MAX_TOKENS <= 2304 and sources.MAX_UPLOAD <= 10 * 2**20
    with pytest.raises(TraceError, match="larger than the 10 MiB"):
        sources.import_trace(b" " * (sources.MAX_UPLOAD + 1))


@pytest.mark.slow  # seconds: every frame of 6 steps of 66k mask cells
def test_the_worst_upload_the_limits_allow_is_drawn_whole():
    trace, _ = sources.import_trace(chains(256, 6))
    at = opened("sps", trace)
    assert not errors(at) and not at.error and len(player(at, "sps")["frames"]) == 6


def test_a_cllm_trace_is_replayed_on_the_jacobi_page_and_every_method_has_a_page():
    assert sources.page_of("cllm") == "jacobi"
    for method in catalog.METHODS:
        assert (Path(APP).parent / page_of(sources.page_of(method))[0]).exists()
    at = opened("jacobi", sources.load(sources.recorded("cllm")["greedy"]))  # imported, kept for page_of("cllm")
    assert not errors(at) and not at.error and any(c.value.startswith("Trace: cllm") for c in at.caption)


# ---------------------------------------------------------------- the operator's settings: checked at start

BAD_SETTINGS = {  # variable -> (its value in a folder `d` holding a FIFO, a loop and garbage, the words refusing it)
    offered.BACKEND: [("http://[::1", "PARADEC_BACKEND"), ("http://gpu-box:99999", "PARADEC_BACKEND"),
                      ("gpu-box:8765", "PARADEC_BACKEND")],
    offered.ENGINE: [("vllm=http://127.0.0.1:99999", "port"), ("vllm=http://[::1", "bracket"),
                     ("vllm=http://h:abc", "port"), ("mystery=http://h:1", "KIND=URL")],
    offered.PRESET: [("{d}/fifo", "not a regular file"), ("{d}", "not a regular file"), ("{d}/missing", "cannot read"),
                     ("{d}/loop", "cannot read"), ("{d}/garbage", "not JSON")],
    offered.MODELS: [("org/ok, bell\x07", "left out")], offered.DRAFTS: [("\x1b[2J", "left out")],
    offered.WEIGHTS: [("x" * 400, "left out")],
}


@pytest.fixture
def hostile_folder(tmp_path) -> Path:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "garbage").write_bytes(b"\x00\xff{{{")
    return tmp_path


@pytest.mark.parametrize("variable, value, words", [(v, x, w) for v, cases in BAD_SETTINGS.items() for x, w in cases])
def test_a_bad_operator_setting_is_one_line_and_the_rest_is_served(monkeypatch, hostile_folder, variable, value,
                                                                    words):
    monkeypatch.setenv(variable, value.format(d=hostile_folder))
    found = offered.problems()
    assert len(found) == 1 and variable in found[0] and words in found[0] and "\n" not in found[0], found
    assert offered.preset_settings("eagle3") == {} and offered.models()[0] == "embedded"
    assert value.format(d=hostile_folder) not in offered.models() + offered._listed(offered.DRAFTS)


def test_the_app_serves_every_page_with_every_setting_bad(monkeypatch, hostile_folder):
    """A preset that cannot load is a notice on live pages (runs use the methods' own settings), a malformed
    backend an error box in the sidebar (runs stay in this process), a malformed engine one on its page."""
    for variable, cases in BAD_SETTINGS.items():
        monkeypatch.setenv(variable, cases[0][0].format(d=hostile_folder))
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["sb.source"] = "live"
    at.run()
    for page in ("views/home.py", "views/pld.py", "views/production.py"):
        at.switch_page(page).run()
        assert not errors(at), errors(at)
        assert any(offered.BACKEND in e.value for e in at.error)
        assert any(offered.PRESET in w.value and "own settings" in w.value for w in at.warning)
    assert any(offered.ENGINE in e.value for e in at.error)
    assert at.session_state["_settings"].backend == ""


@pytest.mark.slow
def test_a_real_server_logs_each_bad_setting_once_and_serves_every_page(hostile_folder):
    """`streamlit run app.py` with every setting bad: the first session logs one line per setting (not one per
    page or visitor), and every page, opened live by a visitor of its own, is drawn without an exception, with
    the preset's notice."""
    import asyncio
    import socket
    import subprocess
    import sys
    import urllib.request

    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    from ui import guide

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, **{v: cases[0][0].format(d=hostile_folder) for v, cases in BAD_SETTINGS.items()}}
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", APP, "--server.port", str(port),
                               "--server.address", "127.0.0.1"], env=env, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, start_new_session=True)

    async def visit(page: str) -> tuple[list[str], list[str]]:
        """A visitor's first view of a page, live (a classroom link's source=live): its exceptions and alerts."""
        async with websockets.connect(f"ws://127.0.0.1:{port}/_stcore/stream", subprotocols=["streamlit"],
                                      max_size=None) as ws:
            msg = BackMsg()
            msg.rerun_script.query_string, msg.rerun_script.page_name = "source=live", page
            await ws.send(msg.SerializeToString())
            raised, alerts = [], []
            while True:
                forward = ForwardMsg()
                forward.ParseFromString(await asyncio.wait_for(ws.recv(), 120))
                element = forward.delta.new_element
                if forward.WhichOneof("type") == "delta" and element.WhichOneof("type") == "exception":
                    raised.append(f"{page}: {element.exception.message}")
                if forward.WhichOneof("type") == "delta" and element.WhichOneof("type") == "alert":
                    alerts.append(element.alert.body)
                if forward.WhichOneof("type") == "script_finished":
                    return raised, alerts

    try:
        end = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
                break
            except OSError:
                assert time.monotonic() < end and server.poll() is None, "the server did not start"
                time.sleep(0.2)
        for page in guide.pages():
            raised, alerts = asyncio.run(visit(page))
            assert raised == [], raised
            assert any(offered.PRESET in a for a in alerts) and any(offered.BACKEND in a for a in alerts), alerts
    finally:
        os.killpg(server.pid, 15)
        log = server.communicate(timeout=30)[0]
    refused = [line for line in log.splitlines() if "operator setting refused" in line]
    assert len(refused) == len(BAD_SETTINGS) and "Traceback" not in log, log
    assert all(any(v in line for line in refused) for v in BAD_SETTINGS) and "\x1b" not in log
