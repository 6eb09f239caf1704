"""Hostile trace files (issue 16): every semantically wrong one (tests/hostile_traces.py, BROKEN)
is refused on load with one line naming what is wrong, and every odd but legal one (ODD) loads.
The pages' side of it (an error box, never a crash) is in tests/test_hostile_app.py."""
from __future__ import annotations

import pytest

from hostile_traces import BROKEN, ODD, build
from paradec.trace import Trace, TraceError


@pytest.mark.parametrize("name", BROKEN)
def test_a_wrong_trace_is_refused_with_one_line(name):
    _, data = build(BROKEN, name)
    with pytest.raises(TraceError) as refused:
        Trace.from_json(data)
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 400


@pytest.mark.parametrize("name", ODD)
def test_an_odd_but_legal_trace_loads(name):
    _, data = build(ODD, name)
    assert Trace.from_json(data).steps
