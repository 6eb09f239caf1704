"""Classroom links: a teacher's preset in the URL fills the sidebar, the method's parameters and
the step; values that do not fit fall back to the defaults; the page's own link round-trips."""
import json
from urllib.parse import parse_qsl, urlsplit

import pytest
from test_app import open_page

from paradec.tuning import presets
from ui import sidebar
from ui.presets import PRESETS

from helpers import player

PROMPT = "Explain a hash map to a ten-year-old."


def test_a_classroom_link_sets_the_prompt_sampling_parameters_and_step():
    at = open_page("views/jacobi.py", prompt=PROMPT, temperature="0.7", top_p="0.9", max_new="32", seed="5",
                   source="recorded", params=json.dumps({"block": 4, "init": "pad"}), step="3", weights="f32")
    s = at.session_state[sidebar.KEY]  # the sidebar's settings (AppTest drops its widgets under st.navigation)
    assert (s.prompt, s.temperature, s.top_p, s.max_new_tokens, s.seed, s.live) == (PROMPT, 0.7, 0.9, 32, 5, False)
    assert s.weights == "f32"
    assert at.slider(key="jacobi.block").value == 4 and at.selectbox(key="jacobi.init").value == "pad"
    assert player(at, "jacobi")["step"] == 3 and not at.warning


def test_a_preset_prompt_picks_its_preset_and_values_out_of_range_are_clamped():
    text = next(iter(PRESETS.values()))
    at = open_page("views/pld.py", prompt=text, temperature="9", max_new="many")
    s = at.session_state[sidebar.KEY]
    assert s.prompt == text and s.temperature == 1.5 and s.max_new_tokens == 48  # clamped; not a number: default


def test_parameters_that_do_not_fit_the_page_fall_back_to_the_defaults():
    at = open_page("views/lookahead.py", params=json.dumps({"window": 99, "ngram": 2}))
    tuned = presets.tuned("cpu")[0]["lookahead"]
    assert at.slider(key="lookahead.window").value == tuned["window"]
    assert at.slider(key="lookahead.ngram").value == tuned["ngram"]
    assert any("do not fit" in w.value for w in at.warning)


def test_a_live_pages_link_round_trips_its_settings():
    """In live mode the link carries what a run is decoded with: the prompt, the sampling, the parameters."""
    at = open_page("views/sps.py", prompt=PROMPT, seed="3", params=json.dumps({"k": 6, "draft_length": "heuristic"}),
                   step="2", trace="sampled", source="live")
    link = next(c.value for c in at.code if "params=" in c.value)
    query = dict(parse_qsl(urlsplit(link).query))
    assert json.loads(query["params"])["k"] == 6 and query["step"] == "2" and query["trace"] == "sampled"
    again = open_page("views/sps.py", **query)
    assert again.slider(key="sps.k").value == 6 and again.selectbox(key="sps.draft_length").value == "heuristic"
    assert again.session_state[sidebar.KEY].prompt == PROMPT and again.session_state[sidebar.KEY].seed == 3
    assert player(again, "sps")["step"] == 2 and again.selectbox(key="sps.recorded").value == "sampled"


@pytest.mark.parametrize("key", ["upload", "dl_json", "run", "recorded"])  # a file uploader, buttons, a radio
def test_a_link_sets_only_the_methods_parameters_never_another_widgets_key(key):
    at = open_page("views/pld.py", params=json.dumps({key: "x", "k": 3}))  # open_page: no exception box
    assert at.slider(key="pld.k").value == 3
    assert f"pld.{key}" not in at.session_state or at.session_state[f"pld.{key}"] != "x"


@pytest.mark.parametrize("query", [  # each once raised an exception or broke the player
    {"params": json.dumps({"run": True}), "source": "live"}, {"params": json.dumps({"step": "abc"})},
    {"step": "abc"}, {"params": json.dumps({"ngram_max": "abc", "k": 3})}, {"params": json.dumps({"k": True})},
    {"params": json.dumps({"k": [1], "ngram_min": {"a": 1}})}, {"params": json.dumps({"k": 1e300})}])
def test_a_link_value_of_the_wrong_kind_is_left_out_with_a_note(query):
    at = open_page("views/pld.py", **query)  # open_page: no exception box
    assert not at.error and player(at, "pld")["step"] >= 1
    k = at.slider(key="pld.k").value
    assert type(k) is int and (k == 3 or '"k": 3' not in query.get("params", ""))
    if "params" in query:
        assert any("left out" in w.value for w in at.warning), [w.value for w in at.warning]


def test_a_link_to_a_recorded_run_reproduces_the_screen_and_carries_no_live_settings():
    """The screen as it is: the run, the step, the version, the language and the modes; a recorded run replays its
    own prompt and parameters, so the sidebar's (which only a live run uses) stay out of its link."""
    from urllib.parse import parse_qs, urlsplit

    from ui import classroom
    from ui.settings import Settings

    shown = {"step": "7", "trace": "sampled", "version": "eagle2", "lang": "fr", "present": "1", "other": "x"}
    recorded = Settings("embedded", "the sidebar's prompt", 0.7, 0.9, 48, 3, False, "")
    url, whole = classroom.link("http://h/eagle", recorded, {"block": 4}, shown)
    assert whole and parse_qs(urlsplit(url).query) == {k: [v] for k, v in shown.items() if k != "other"}
    live = classroom.link("http://h/eagle", Settings("embedded", "a prompt", 0.7, 0.9, 48, 3, True, ""), {"k": 2},
                          {"step": "2"})[0]
    q = parse_qs(urlsplit(live).query)
    assert q["prompt"] == ["a prompt"] and q["params"] == ['{"k": 2}']
    assert q["source"] == ["live"] and q["step"] == ["2"] and "weights" not in q  # the default: left out
    f32 = Settings("embedded", "a prompt", 0.7, 0.9, 48, 3, True, "", "f32")
    assert parse_qs(urlsplit(classroom.link("http://h/eagle", f32, {}, {})[0]).query)["weights"] == ["f32"]


def test_a_shared_link_reopened_shows_the_same_run_and_step():
    from test_app import open_page

    from helpers import player

    at = open_page("views/sps.py", trace="sampled", step="4")
    first = (at.selectbox(key="sps.recorded").value, player(at, "sps")["step"])
    link = next(c.value for c in at.code if "trace=" in c.value)
    from urllib.parse import parse_qs, urlsplit

    again = open_page("views/sps.py", **{k: v[0] for k, v in parse_qs(urlsplit(link).query).items()})
    assert first == ("sampled", 4) == (again.selectbox(key="sps.recorded").value, player(again, "sps")["step"])
