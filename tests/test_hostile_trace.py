"""Hostile trace files: every semantically wrong one (tests/hostile_traces.py, BROKEN)
is refused on load with one line naming what is wrong, and every odd but legal one (ODD) loads.
The pages' side of it (an error box, never a crash) is in tests/test_hostile_app.py."""
from __future__ import annotations

import pytest
import torch
from test_fuzz import setup  # noqa: F401 (fixture: a tiny target, its self:1 draft, random heads)

from paradec import catalog, methods
from paradec.core.engine import decode
from paradec.core.sampling import Sampler
from paradec.traces.trace import Trace, TraceError

from hostile_traces import BROKEN, ODD, build


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


# Sampled runs of every method (and Medusa's typical acceptance) must pass the loader's checks:
# they are the traces the checks exist for. (tests/test_fuzz.py round-trips greedy runs.)
SAMPLED = [(m, {"exit_layer": 1, "adapter": "none"} if m == "early_exit" else {}) for m in catalog.METHODS]
SAMPLED += [("medusa", {"acceptance": "typical"})]


@pytest.mark.parametrize("method, params", SAMPLED, ids=[m + "-" + "-".join(map(str, p.values())) for m, p in SAMPLED])
def test_sampled_runs_of_every_method_pass_the_checks(setup, method, params, one_thread):
    params = {**params, **({"heads": setup["heads"]["medusa"]} if method == "medusa" else {}),
              **({"head": setup["heads"][method]} if method.startswith("eagle") else {})}
    drafter = methods.make_drafter(method, methods.parse_params(method, params), setup["draft"], setup["target"])
    gen = torch.Generator().manual_seed(3)
    steps = list(decode(setup["target"], drafter, [3, 1, 4, 1, 5, 9, 2, 6], 20, Sampler(0.8, 0, 0.9), gen))
    trace = Trace(method=method, params=drafter.params, model="tiny", prompt="pi", prompt_ids=[3, 1, 4, 1, 5, 9, 2, 6],
                  sampling={"temperature": 0.8, "top_p": 0.9, "top_k": 0, "seed": 3}, max_new_tokens=20, steps=steps)
    assert Trace.from_json(trace.to_json()) == trace
