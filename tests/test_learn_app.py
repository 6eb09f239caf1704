"""Predict mode, the exercises and the class vote in the app, with streamlit's AppTest (the browser's side is in
tests/test_learn_browser.py): ?predict=1 puts each step's question and its veiled view in the player's frames and
keeps the flag in the classroom link, the pages without it ask nothing, a method page sends its exercises to the
quiz, and a presenter's class publishes the player's question where a student's page answers it."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from paradec.learn import questions
from ui import classroom, sources, vote
from ui.settings import Settings

from helpers import APP, go_to, player

pytestmark = pytest.mark.slow  # AppTest runs of whole pages: make test, beside the other slow tests


def open_page(page: str, **query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(query)
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def shown(at: AppTest, method: str):
    """The recorded run the page shows (it opens on the one its method's rule picks)."""
    return sources.load(sources.recorded(method)[at.query_params["trace"]])


def component(at: AppTest, key: str) -> dict:
    el = next(e for e in at.get("bidi_component") if e.key == key)
    return json.loads(el.proto.json)


def test_predict_mode_puts_each_steps_question_in_the_players_frames():
    at = open_page("views/sps.py", predict="1")
    data = player(at, "sps")
    trace = shown(at, "sps")
    assert data["predict"] == {"page": "sps", "vote": False}
    for i, f in enumerate(data["frames"]):
        q = questions.ask(trace, i)
        assert ("ask" in f) == (q is not None)
        if q:
            assert f["ask"]["text"].startswith("Predict") and f["ask"]["answer"] == q["answer"]
            assert "is the first step worth seeing" not in f["pre"]["story"] and f["pre"]["figs"]["tree"]
            assert "<b>Step" in f["pre"]["story"] and "accepted" not in f["pre"]["story"]
    assert at.query_params["predict"] == "1" and at.session_state["predict"]


def test_without_the_flag_the_page_asks_nothing():
    at = open_page("views/sps.py")
    data = player(at, "sps")
    assert data["predict"] is None and not any("ask" in f for f in data["frames"])


def test_in_french_the_questions_say_predisez():
    at = open_page("views/eagle.py", predict="1", lang="fr")
    asked = [f["ask"] for f in player(at, "eagle3")["frames"] if "ask" in f]
    assert asked and all(q["text"].startswith("Prédisez") for q in asked)
    assert all(t["href"].startswith("glossary?term=") and "lang=fr" in t["href"] for q in asked for t in q["terms"])


def test_the_classroom_link_keeps_predict_mode():
    s = Settings("embedded", "a prompt", 0.0, 1.0, 48, 0, False, "")
    assert "predict=1" in classroom.link("http://h/sps", s, {}, {"step": "3", "predict": "1"})[0]
    assert "predict" not in classroom.link("http://h/sps", s, {}, {"step": "3"})[0]


def test_a_method_page_ends_with_its_exercises():
    at = open_page("views/jacobi.py")
    data = component(at, "quiz.jacobi")
    assert 3 <= len(data["exercises"]) <= 5 and {e["kind"] for e in data["exercises"]} <= {"number", "choice"}


def test_the_roofline_page_asks_in_predict_mode_only():
    assert not [e for e in open_page("views/roofline.py").get("bidi_component") if e.key == "quiz.roofline.ask"]
    data = component(open_page("views/roofline.py", predict="1"), "quiz.roofline.ask")
    assert len(data["questions"]) == 2 and all(q["text"].startswith("Predict") for q in data["questions"])


def test_a_presenters_class_asks_the_players_question_and_a_student_answers_it():
    at = open_page("views/sps.py", present="1", predict="1")
    next(b for b in at.button if b.key == "vote.open").click().run()
    code, token = at.session_state[vote.ROOM]
    go_to(at, "sps", 5)
    room = vote.rooms().view(code)
    trace = shown(at, "sps")
    assert room["question"] == questions.ask(trace, 4) and room["total"] == 0
    student = AppTest.from_file(APP, default_timeout=60)
    student.query_params.update(room=code.lower())
    student.run()
    student.switch_page("views/vote.py").run()
    assert not student.exception and not student.error
    choice = next(b for b in student.button if b.key.startswith("vote.") and b.key.endswith(".0"))
    choice.click().run()
    assert vote.rooms().view(code)["total"] == 1
    wrong = AppTest.from_file(APP, default_timeout=60)
    wrong.query_params.update(room="NOPE22")
    wrong.run()
    wrong.switch_page("views/vote.py").run()
    assert "No open class has the code NOPE22" in wrong.error[0].value
    vote.rooms().close(code, token)
