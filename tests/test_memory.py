"""Memory per method (paradec.bench_memory) on a tiny model: the weights split checked against parameter
counts, the KV cache against the model's shape and the trace's widest pass, the run's own allocations."""
import pytest
import torch

from paradec import bench_memory as memory
from paradec.models import truncated

pytestmark = pytest.mark.usefixtures("one_thread")
SETTINGS = dict(max_new_tokens=8, chat=False)


def _params_bytes(model) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def _buffers_bytes(model) -> int:
    return sum(b.untyped_storage().nbytes() for b in model.buffers())


@pytest.fixture(scope="module")
def draft(tiny_loaded):
    return truncated(tiny_loaded, 1)


def test_ar_weights_are_the_parameters(tiny_loaded):
    m = memory.measure(tiny_loaded, "ar", "a b a b a b", **SETTINGS)["memory"]
    model = tiny_loaded.model
    assert _params_bytes(model) <= m["weights_target"] <= _params_bytes(model) + _buffers_bytes(model)
    linear = sum(mod.weight.numel() * 4 for mod in model.modules() if isinstance(mod, torch.nn.Linear))
    assert linear <= m["weights_packed"] <= 1.25 * linear  # the kernel's copy of every projection and the LM head
    assert m["weights_draft"] == m["weights_heads"] == 0
    assert m["peak"] >= m["weights_target"] + m["weights_packed"] + m["held"]


def test_draft_and_kv(tiny_loaded, draft):
    out = memory.measure(tiny_loaded, "sps", "a b a b a b", ["k=3"], draft=draft, **SETTINGS)
    m, trace = out["memory"], out["trace"]
    assert _params_bytes(draft.model) <= m["weights_draft"] <= _params_bytes(draft.model) * 2.3  # + its packed copy
    cfg = tiny_loaded.model.config
    per_token = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * (cfg.hidden_size // cfg.num_attention_heads) * 4
    rows = len(trace.prompt_ids) + len(trace.token_ids) - 1 + 3  # the last pass: the context and 1 + 3 drafted rows
    assert memory.widest_rows(trace) >= rows - 3 and m["kv"] == memory.widest_rows(trace) * per_token
    assert m["held"] > 0 and m["activations"] > 0
