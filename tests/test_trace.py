"""Traces: a real run round-trips through JSON; the metrics have one definition
(tau = new tokens / target forwards, bonus included, AR = 1.00; acceptance = accepted drafts /
tested ones, tests/test_acceptance.py); anything that is not a valid trace raises TraceError
with a message that says what is wrong."""
import json
from pathlib import Path

import pytest

from paradec.core import records
from paradec.core.steps import Node, Step
from paradec.models import truncated
from paradec.run import run
from paradec.traces import trace as trace_mod
from paradec.traces.trace import MAX_TRACE_BYTES, SCHEMA_VERSION, Trace, TraceError, record_class

pytestmark = pytest.mark.usefixtures("one_thread")

PROMPT = "one two three, one two three, one two"


@pytest.fixture(scope="module")
def traces(tiny_loaded):
    draft = truncated(tiny_loaded, 1)
    return {
        "ar": run(tiny_loaded, "ar", PROMPT, max_new_tokens=12),
        "sps": run(tiny_loaded, "sps", PROMPT, {"k": 3}, max_new_tokens=12, temperature=1.0, top_k=50, seed=7,
                   draft=draft),
        "pld": run(tiny_loaded, "pld", PROMPT, {"k": 4}, max_new_tokens=12, temperature=0.7, top_p=0.9, seed=3),
        "pld-greedy": run(tiny_loaded, "pld", PROMPT, max_new_tokens=12, chat=False),
    }


@pytest.mark.parametrize("name", ["ar", "sps", "pld", "pld-greedy"])
def test_round_trip(traces, name, tmp_path):
    t = traces[name]
    again = Trace.from_json(t.to_json())
    assert again == t
    assert again.to_json() == t.to_json()
    assert isinstance(again.steps[0], Step)
    assert all(isinstance(n, Node) for s in again.steps for n in s.nodes)
    t.save(tmp_path / "t.json")
    assert Trace.load(tmp_path / "t.json") == t
    assert Trace.from_json(t.to_json().encode("utf-8")) == t


def test_streaming_sees_the_steps_of_the_trace(tiny_loaded):
    seen = []
    t = run(tiny_loaded, "pld", PROMPT, max_new_tokens=10, temperature=1.0, seed=1, on_step=seen.append)
    assert seen == t.steps and len(seen) >= 1


def test_a_trace_replays_without_a_tokenizer(traces):
    """Every token id a trace mentions has its text in the trace."""
    t = traces["sps"]
    ids = set(t.prompt_ids) | set(t.token_ids)
    for s in t.steps:
        ids |= {tok for tok, _ in s.last_p_top + (s.residual_top or [])}
        for n in s.nodes:
            ids |= {n.token} | {tok for tok, _ in n.p_top + n.q_top}
    assert ids <= {int(k) for k in t.token_text}
    assert any(s.nodes for s in t.steps)


def test_sampled_trace_records_the_acceptance_test(traces):
    t = traces["sps"]
    tested = [n for s in t.steps for n in s.nodes if n.status != "unreached"]
    assert tested
    for n in tested:
        assert n.q is not None and n.p is not None and n.u is not None
        assert n.accept_prob == pytest.approx(min(1.0, n.p / n.q), abs=1e-4)
        assert (n.status == "accepted") == (n.u < n.accept_prob)


def test_metrics_of_real_runs(traces):
    for t in traces.values():
        assert t.new_tokens == len(t.token_ids) == sum(len(s.tokens) for s in t.steps)
        assert t.target_forwards == len(t.steps)  # one verify pass per step
        assert t.tau == pytest.approx(t.new_tokens / t.target_forwards)
        drafted = sum(len(s.nodes) for s in t.steps)
        accepted = sum(len(s.accepted) for s in t.steps)
        assert t.drafted_accepted == (accepted / drafted if drafted else None)
        assert t.acceptance == (accepted / t.tested if drafted else None)
        assert 1 <= t.new_tokens <= 12
    ar = traces["ar"]
    assert ar.tau == 1.0 and ar.acceptance is None and ar.drafted_accepted is None and ar.draft_forwards == 0
    assert traces["sps"].draft_forwards == sum(len(s.nodes) for s in traces["sps"].steps)


def _step(drafted: int, accepted: int) -> Step:
    status = lambda i: "accepted" if i < accepted else "rejected" if i == accepted else "unreached"  # noqa: E731
    nodes = [Node(token=10 + i, parent=i - 1, depth=i + 1, status=status(i)) for i in range(drafted)]
    tokens = [10 + i for i in range(accepted)] + [99]
    return Step(index=0, context_len=5, nodes=nodes, accepted=list(range(accepted)), tokens=tokens,
                origins=["accepted"] * accepted + ["bonus"], draft_forwards=drafted)


def _trace(steps) -> Trace:
    return Trace(method="sps", params={"k": 4}, model="m", prompt="p", prompt_ids=[1, 2], sampling={},
                 max_new_tokens=64, steps=steps, wall_s=2.0)


def test_metric_definitions_by_hand():
    t = _trace([_step(4, 3), _step(4, 0), _step(4, 4)])
    # 4 + 1 + 5 = 10 tokens in 3 target forwards; 7 of 12 drafts accepted, 7 of 4 + 1 + 4 = 9 tested
    assert t.new_tokens == 10
    assert t.target_forwards == 3
    assert t.tau == pytest.approx(10 / 3)
    assert t.drafted_accepted == pytest.approx(7 / 12) and t.acceptance == pytest.approx(7 / 9)
    assert t.draft_forwards == 12
    s = t.summary()
    assert s["tau"] == 3.3333 and s["acceptance"] == 0.7778 and s["drafted_accepted"] == 0.5833
    assert s["tokens_per_s"] == 5.0
    assert s["new_tokens"] == 10 and s["target_forwards"] == 3
    ar = _trace([_step(0, 0) for _ in range(7)])
    assert ar.tau == 1.0 and ar.acceptance is None and ar.summary()["acceptance"] is None
    assert _trace([]).tau == 0.0 and _trace([]).acceptance is None


def test_summary_keys(traces):
    assert set(traces["sps"].summary()) == {
        "method", "params", "new_tokens", "token_ids", "text", "target_forwards", "draft_forwards",
        "tau", "acceptance", "drafted_accepted", "wall_s", "tokens_per_s",
    }
    json.dumps(traces["sps"].summary())


# ---------------------------------------------------------------- invalid input

@pytest.fixture(scope="module")
def good(traces) -> dict:
    return json.loads(traces["sps"].to_json())


def _mutated(good, path, value=None, delete=False) -> str:
    d = json.loads(json.dumps(good))
    obj = d
    for key in path[:-1]:
        obj = obj[key]
    if delete:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value
    return json.dumps(d)


def _raises(text, *words):
    with pytest.raises(TraceError) as e:
        Trace.from_json(text)
    msg = str(e.value)
    assert "\n" not in msg
    for w in words:
        assert w.lower() in msg.lower(), msg
    return msg


def test_truncated(good):
    text = json.dumps(good)
    for cut in (1, len(text) // 3, len(text) // 2, len(text) - 1):
        _raises(text[:cut], "JSON")


@pytest.mark.parametrize("text", ["", "hello", "{'single': 'quotes'}", "{\"a\": 1,}", "[1, 2"])
def test_not_json(text):
    _raises(text, "JSON")


def test_not_utf8():
    _raises(b"\xff\xfe\xfa{}" * 3)


def test_too_deeply_nested():
    _raises("[" * 100_000 + "]" * 100_000)


@pytest.mark.parametrize("value", [[], "trace", 1, None])
def test_top_level_not_an_object(value):
    _raises(json.dumps(value), "paradec trace")


@pytest.mark.parametrize("schema", [None, 0, "1", SCHEMA_VERSION + 1])
def test_wrong_schema(good, schema):
    _raises(_mutated(good, ["schema"], schema), "schema")
    _raises(_mutated(good, ["schema"], delete=True), "schema")


@pytest.mark.parametrize("name", ["eagle2-greedy", "mirror-greedy"])
def test_a_schema_1_trace_loads_with_typed_records(name):
    """Files saved before records were typed (the first three steps of two shipped traces as they
    were): each step's extras become its method's record, EAGLE's 7-item candidate lists
    records.Candidate; the records equal those of the same run converted and shipped as schema 2
    (`NAME.records.json`: those steps' records, kept when the shipped traces were re-recorded)."""
    folder = Path(__file__).parent / "schema1"
    old = Trace.load(folder / f"{name}.json")
    converted = json.loads((folder / f"{name}.records.json").read_text())
    assert old.schema == SCHEMA_VERSION == 2
    assert [s.record for s in old.steps] == [record_class(old.method).from_dict(r) for r in converted]
    assert all(type(s.record) is record_class(old.method) for s in old.steps)
    if name.startswith("eagle"):
        c = old.steps[1].record.drafted[0]
        assert isinstance(c, records.Candidate) and c.parent == -1 and c.depth == 1 and c.score <= 0
    assert Trace.from_json(old.to_json()).to_dict() == old.to_dict()  # saved again as schema 2


@pytest.mark.parametrize(
    "path",
    [["surprise"], ["steps", 0, "surprise"], ["steps", 0, "nodes", 0, "surprise"]],
    ids=["trace", "step", "node"],
)
def test_unknown_field(good, path):
    assert good["steps"][0]["nodes"], "the fixture run should draft in its first step"
    _raises(_mutated(good, path, 1), "unknown field", "surprise")


@pytest.mark.parametrize(
    "path",
    [["method"], ["steps", 0, "tokens"], ["steps", 0, "nodes", 0, "token"]],
    ids=["trace", "step", "node"],
)
def test_missing_field(good, path):
    _raises(_mutated(good, path, delete=True), path[-1])


@pytest.mark.parametrize(
    "path, value",
    [
        (["steps"], "abc"),
        (["steps"], 5),
        (["steps"], {"a": 1}),
        (["steps", 0], "ab"),
        (["steps", 0], [1, 2]),
        (["steps", 0, "nodes"], "xy"),
        (["steps", 0, "nodes", 0], 3),
        (["steps", 0, "tokens"], "abc"),
        (["steps", 0, "tokens"], [1, "two"]),
        (["steps", 0, "accepted"], None),
        (["steps", 0, "nodes", 0, "token"], "x"),
        (["steps", 0, "nodes", 0, "q"], "high"),
        (["prompt_ids"], {"0": 1}),
        (["params"], [1]),
        (["prompt"], 5),
        (["max_new_tokens"], "64"),
    ],
)
def test_wrong_types_are_malformed(good, path, value):
    """Values of the wrong type are refused on load, not left to crash a page later."""
    _raises(_mutated(good, path, value), "malformed")


def test_oversize():
    _raises(" " * (MAX_TRACE_BYTES + 1), "too large")


def test_oversize_file(tmp_path, monkeypatch):
    monkeypatch.setattr(trace_mod, "MAX_TRACE_BYTES", 1000)
    path = tmp_path / "big.json"
    path.write_text(" " * 1001)
    with pytest.raises(TraceError, match="too large"):
        Trace.load(path)


def test_unreadable_file(tmp_path):
    with pytest.raises(TraceError, match="cannot read"):
        Trace.load(tmp_path / "missing.json")
    with pytest.raises(TraceError, match="cannot read"):
        Trace.load(tmp_path)  # a folder
