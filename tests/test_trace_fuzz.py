"""Trace files are untrusted input: whatever bytes a user uploads, the loader (and the app's
import, ui.sources.import_trace) either returns a trace or raises TraceError with a
one-line message; never another exception. A trace that loads can be exported and
imported again unchanged (Share exports what Import accepted).

Hypothesis feeds random bytes, random JSON, and real recorded traces mutated: a value
replaced by a wrong type, a huge or non-finite number, deep nesting, a key deleted, the
text truncated or a number rewritten with thousands of digits."""
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paradec.traces.trace import Trace, TraceError
from ui.sources import import_trace

TRACES = Path(__file__).resolve().parent.parent / "assets" / "traces"
SMALL = ["ar-greedy", "pld-greedy", "pld-sampled", "medusa-sampled"]  # every field kind, tens of kB
REAL = {name: json.loads((TRACES / f"{name}.json").read_text()) for name in SMALL}
FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def check(data):
    """The loader's contract on one input."""
    for load in (Trace.from_json, lambda d: import_trace(d)[0]):
        try:
            trace = load(data)
        except TraceError as e:
            msg = str(e)
            assert msg and "\n" not in msg, repr(msg)
            continue
        again = Trace.from_json(trace.to_json())
        assert again == trace


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)
HOSTILE = st.one_of(
    json_values,
    st.sampled_from([None, True, "x", -1, 10**30, -(2**64), 2**63, math.nan, math.inf, -math.inf, 1e308, [], {},
                     [[-1]], {"token": 1}]),
    st.sampled_from([2, 30, 300, 600]).map(lambda n: json.loads("[" * n + "]" * n)),  # deep, but json parses it
)


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(data):
    check(data)


@FUZZ
@given(json_values)
def test_random_json(value):
    check(json.dumps(value))
    check(json.dumps({**REAL["ar-greedy"], "steps": value}) if isinstance(value, list) else json.dumps(value))


def _containers(value, path=()):
    """Every (path, container) of a parsed JSON value, the root included."""
    yield path, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        if isinstance(child, (dict, list)) and len(path) < 8:
            yield from _containers(child, path + (key,))


@st.composite
def mutated(draw):
    """A real trace with one or two values replaced by hostile ones or deleted."""
    data = json.loads(json.dumps(REAL[draw(st.sampled_from(SMALL))]))
    for _ in range(draw(st.integers(1, 2))):
        spots = [(p, c) for p, c in _containers(data) if c]
        _, container = draw(st.sampled_from(spots[:2000]))
        key = draw(st.sampled_from(list(container) if isinstance(container, dict) else range(len(container))))
        if draw(st.booleans()) and isinstance(container, dict):
            del container[key]
        else:
            container[key] = draw(HOSTILE)
    return data


@pytest.mark.slow
@FUZZ
@given(mutated())
def test_mutated_real_traces(data):
    check(json.dumps(data))  # Python writes NaN and Infinity as bare words: a hostile file may too


@FUZZ
@given(st.sampled_from(SMALL), st.sampled_from(["params", "sampling", "token_text", "record"]), st.text(max_size=4),
       HOSTILE)
@pytest.mark.slow
def test_hostile_values_in_free_form_fields(name, field, key, value):
    """The dict fields are typed only as dicts: anything can hide inside them."""
    data = json.loads(json.dumps(REAL[name]))
    owner = data["steps"][-1] if field == "record" else data
    owner[field] = {**(owner[field] or {}), key: value}  # AR's record is null
    check(json.dumps(data))


@FUZZ
@given(st.sampled_from(SMALL), st.floats(0, 1), st.sampled_from(["cut", "digits", "nan", "bool"]))
def test_damaged_text(name, where, how):
    text = (TRACES / f"{name}.json").read_text()
    at = int(where * len(text))
    if how == "cut":
        text = text[:at]
    else:
        at = max(text.find(": ", at), 0) + 2  # the value after some key
        bad_value = {"digits": "9" * 5000 + ", \"x\": ", "nan": "NaN, \"y\": ", "bool": "true, \"z\": "}[how]
        text = text[:at] + bad_value + text[at:]
    check(text.encode("utf-8"))


@pytest.mark.parametrize("name", SMALL)
def test_real_traces_pass_the_contract(name):
    check((TRACES / f"{name}.json").read_bytes())


@pytest.mark.parametrize("depth", [40, 600])
@pytest.mark.parametrize("field", ["params", "record"])
def test_deep_nesting_in_free_form_fields(field, depth):
    """Outside hypothesis (which raises the recursion limit while it runs): nesting that json
    parses but that exporting would recurse through is refused on load."""
    data = json.loads(json.dumps(REAL["pld-greedy"]))
    (data["steps"][-1] if field == "record" else data)[field]["deep"] = json.loads("[" * depth + "]" * depth)
    with pytest.raises(TraceError, match="nested"):
        Trace.from_json(json.dumps(data))
