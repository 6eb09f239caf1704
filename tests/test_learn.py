"""What the app asks a learner (paradec.learn): predict questions computed from the step records, of the kinds each
method declares in the catalogue; the Roofline page's questions from the measured cost curve; every method page's
3 to 5 exercises, each answered right and wrong against the shipped traces; and the class vote's store (bounded,
in memory, codes that counting cannot find)."""
import dataclasses
import json
import re
from pathlib import Path

import pytest

from paradec import catalog
from paradec.learn import exercises, questions, roofline
from paradec.traces.trace import Trace
from ui import vote_store

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "assets"
TRACES = sorted((ASSETS / "traces").glob("*-*.json"))
ASKING = [m for m in catalog.METHODS.values() if m.family != "baseline"]  # AR has no verify pass to predict
PAGES = sorted({m.page for m in ASKING})


def _trace(path: Path) -> Trace:
    return Trace.load(path)


def _template(t: list) -> str:
    template, values = t
    return template.format(**values)


def test_every_method_declares_known_questions_and_exercises():
    for m in ASKING:
        assert m.questions and {a.kind for a in m.questions} <= set(questions.KINDS), m.name
        assert all(not a.text or a.text.startswith("Predict") for a in m.questions), m.name
        assert {e.kind for e in m.exercises} <= set(exercises.KINDS), m.name
        assert all((ASSETS / "traces" / f"{name}.json").is_file() for e in m.exercises for name in
                   filter(None, (e.trace, e.other))), m.name


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.stem)
def test_every_step_of_every_recorded_trace_asks_from_its_record(path):
    trace = _trace(path)
    asked = [q for i in range(len(trace.steps)) if (q := questions.ask(trace, i))]
    if trace.method == "ar":
        assert not asked
        return
    assert asked, "a method page whose recorded run asks nothing"
    for i in range(len(trace.steps)):
        q = questions.ask(trace, i)
        if q is None:
            continue
        s = trace.steps[i]
        json.dumps(q)  # plain JSON: a static page renders it as the app does
        assert _template(q["text"]).startswith("Predict") and len(q["choices"]) >= 2
        assert 0 <= q["answer"] < len(q["choices"]) and _template(q["why"])
        assert q["node"] is None or 0 <= q["node"] < len(s.nodes)
        if q["kind"] == "accepted":
            assert q["answer"] == len(s.accepted)
        if q["kind"] == "branch":  # the branch kept, and every node's pick names its first-depth ancestor
            assert len(q["pick"]) == len(s.nodes)
            assert q["answer"] == (q["pick"][s.accepted[0]] if s.accepted else len(q["choices"]) - 1)
        if q["kind"] == "keep":
            n = s.nodes[q["node"]]
            assert float(_template(q["choices"][q["answer"]])) == pytest.approx(min(1, n.p / n.q), abs=0.006)
        if q["kind"] == "bet":
            assert q["answer"] == (0 if s.record.hit else 1)


def test_the_veiled_step_tells_nothing_the_verify_pass_found():
    trace = _trace(ASSETS / "traces" / "sps-sampled.json")
    i = next(k for k, s in enumerate(trace.steps) if s.nodes and s.accepted)
    v = questions.veiled(trace, i)
    s = v.steps[i]
    assert [n.token for n in s.nodes] == [n.token for n in trace.steps[i].nodes]  # what was drafted, with its q
    assert [n.q for n in s.nodes] == [n.q for n in trace.steps[i].nodes]
    assert all(n.status == questions.DRAFTED and n.p is None and n.u is None and n.accept_prob is None
               for n in s.nodes)
    assert (s.accepted, s.tokens, s.origins) == ([], [], [])
    assert v.steps[i - 1] is trace.steps[i - 1] and trace.steps[i].tokens  # the trace itself is untouched


def test_a_new_method_brings_its_questions(monkeypatch):
    """A description's questions are all a method needs: the page code asks them."""
    toy = catalog.Method("toy", "toy:Toy", "draft model", "a toy", questions=(
        catalog.Ask("accepted", "Predict: how many of the toy's {drafted} tokens pass?"),))
    monkeypatch.setitem(catalog.METHODS, "toy", toy)
    trace = dataclasses.replace(_trace(ASSETS / "traces" / "sps-fixed.json"), method="toy")
    q = questions.ask(trace, 3)
    assert q["text"][0] == "Predict: how many of the toy's {drafted} tokens pass?" and q["kind"] == "accepted"


def test_the_roofline_questions_read_the_measured_curve():
    ms = roofline.curve(ASSETS)
    asked = roofline.questions(ASSETS)
    assert [q["text"][1]["k"] for q in asked] == list(roofline.ROWS)
    for q in asked:
        k = q["text"][1]["k"]
        assert q["answer"] == (0 if ms[k] / ms[1] - 1 < k - ms[k] / ms[1] else 1)
    assert roofline.cost_ratio({1: 10.0, 8: 12.0, 12: 16.0}, 10) == pytest.approx(1.4)  # between the widths timed
    assert roofline.questions(ASSETS / "nowhere") == []


@pytest.mark.parametrize("page", PAGES)
def test_every_method_page_has_three_to_five_exercises(page):
    found = exercises.for_page(page, ASSETS)
    assert 3 <= len(found) <= 5, [e["id"] for e in found]
    assert len({e["id"] for e in found}) == len(found)
    json.dumps(found)


def _right(e: dict):
    return e["answer"] if e["kind"] == "choice" else f"{e['answer']:.2f}"


def _wrong(e: dict):
    if e["kind"] == "choice":
        return (e["answer"] + 1) % len(e["choices"])
    return f"{e['answer'] + 10 * e['tolerance'] + 1:.2f}"


@pytest.mark.parametrize("page", PAGES)
def test_each_exercise_answered_right_and_wrong(page):
    for e in exercises.for_page(page, ASSETS):
        assert exercises.check(e, _right(e)), (e["id"], _template(e["text"]))
        assert not exercises.check(e, _wrong(e)), e["id"]
        assert _template(e["hint"]) and _template(e["why"])
        if e["kind"] == "number":
            assert str(e["answer"]) not in _template(e["hint"])  # a hint, not the answer
            assert exercises.check(e, _right(e).replace(".", ","))  # a French decimal comma
            assert not exercises.check(e, "") and not exercises.check(e, "nan") and not exercises.check(e, "1e999")
        else:
            assert 2 <= len(e["choices"]) and 0 <= e["answer"] < len(e["choices"])


def test_the_exercises_answers_are_the_traces():
    """A few answers worked by hand from the files."""
    sps = _trace(ASSETS / "traces" / "sps-fixed.json")
    by_id = {e["id"]: e for e in exercises.for_page("sps", ASSETS)}
    assert by_id["sps.1"]["answer"] == pytest.approx(sps.new_tokens / sps.target_forwards)
    assert by_id["sps.2"]["answer"] == pytest.approx(sps.accepted_drafts / sps.tested)
    a = round(sps.acceptance, 2)
    assert by_id["sps.3"]["answer"] == pytest.approx((1 - a ** 5) / (1 - a))
    lookahead = {e["id"]: e for e in exercises.for_page("lookahead", ASSETS)}
    p = _trace(ASSETS / "traces" / "lookahead-greedy.json").params
    assert lookahead["lookahead.3"]["answer"] == (p["window"] + p["candidates"]) * (p["ngram"] - 1)


# ---- the class vote's store ----

class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


QUESTION = {"id": "sps:1:3", "question": {"choices": [["A", {}], ["B", {}], ["C", {}]], "answer": 1}}


def test_codes_are_random_short_and_unambiguous():
    rooms = vote_store.Rooms(max_rooms=200)
    codes = [rooms.open()[0] for _ in range(200)]
    assert len(set(codes)) == 200
    assert all(re.fullmatch(f"[{vote_store.ALPHABET}]{{{vote_store.CODE_LEN}}}", c) for c in codes)
    assert not set("01OI") & set("".join(codes))
    ordered = sorted(codes)
    assert ordered != codes  # not handed out in order: the next code cannot be counted to


def test_only_the_presenter_publishes_reveals_and_closes():
    rooms = vote_store.Rooms()
    code, token = rooms.open()
    for act in (lambda t: rooms.publish(code, t, QUESTION), lambda t: rooms.reveal(code, t),
                lambda t: rooms.close(code, t)):
        with pytest.raises(vote_store.Refused, match="not-presenter"):
            act("guess")
    rooms.publish(code, token, QUESTION)
    rooms.vote(code.lower(), "s1", 2, "sps:1:3")  # a code typed in lower case
    rooms.vote(f" {code} ", "s2", 1, "sps:1:3")
    rooms.vote(code, "s1", 0, "sps:1:3")  # changed until the reveal
    assert rooms.view(code, "s1") | {"question": None} == {"id": "sps:1:3", "question": None, "revealed": False,
                                                          "counts": [1, 1, 0], "total": 2, "mine": 0}
    rooms.publish(code, token, QUESTION)  # the same question again keeps its votes
    assert rooms.view(code)["total"] == 2
    rooms.reveal(code, token)
    with pytest.raises(vote_store.Refused, match="closed"):
        rooms.vote(code, "s3", 1, "sps:1:3")
    rooms.publish(code, token, {**QUESTION, "id": "sps:1:4"})  # the next question: no votes, not revealed
    assert rooms.view(code)["total"] == 0 and not rooms.view(code)["revealed"]
    with pytest.raises(vote_store.Refused, match="moved-on"):
        rooms.vote(code, "s1", 1, "sps:1:3")
    rooms.close(code, token)
    with pytest.raises(vote_store.Unknown):
        rooms.view(code)


def test_every_refusal_has_words_for_the_visitor():
    from ui import vote

    found = set(re.findall(r'(?:Refused|Unknown)\("([a-z-]+)"\)', (ROOT / "ui" / "vote_store.py").read_text()))
    assert found == set(vote.REFUSALS)


def test_the_store_is_bounded_and_rooms_expire():
    clock = Clock()
    rooms = vote_store.Rooms(clock, ttl_s=100, max_rooms=2, max_voters=2)
    code, token = rooms.open()
    rooms.open()
    with pytest.raises(vote_store.Refused, match="too-many-rooms"):
        rooms.open()
    rooms.publish(code, token, QUESTION)
    for bad in (3, -1, True, "1", 1.0):
        with pytest.raises(vote_store.Refused, match="bad-choice"):
            rooms.vote(code, "s1", bad, "sps:1:3")
    for voter in ("", "x" * 65, None):
        with pytest.raises(vote_store.Refused, match="bad-voter"):
            rooms.vote(code, voter, 1, "sps:1:3")
    rooms.vote(code, "s1", 1, "sps:1:3")
    rooms.vote(code, "s2", 1, "sps:1:3")
    with pytest.raises(vote_store.Refused, match="full"):
        rooms.vote(code, "s3", 1, "sps:1:3")
    with pytest.raises(vote_store.Refused, match="too-large"):
        rooms.publish(code, token, {"id": "big", "question": {"choices": [["x" * 20_000, {}]]}})
    clock.t = 60
    rooms.view(code)  # a use keeps the room open
    clock.t = 150  # the other room, unused for 150 s, expired: there is room for a new one
    rooms.open()
    clock.t = 300
    with pytest.raises(vote_store.Unknown):
        rooms.view(code)
    with pytest.raises(vote_store.Unknown):
        rooms.vote("NOPE42", "s1", 0, "x")
