"""Consistency-trained Jacobi (cllm): LoRA deltas merged into a separate copy of the target equal
the LoRA-wrapped forward and leave the base untouched; cllm's greedy output equals AR's on the
fine-tuned model; the trajectory collector ends every block at the greedy continuation; a short
training run end to end; missing or bad deltas give one-line errors."""
import copy
import json
import random

import pytest
import torch

from paradec import cli
from paradec.core.drafter import Drafter
from paradec.core.engine import decode
from paradec.core.sampling import Sampler
from paradec.methods import InputError
from paradec.models import ModelError, lora
from paradec.run import run
from paradec.train import cllm as train_cllm

from helpers import APP, tiny_model

pytestmark = pytest.mark.usefixtures("one_thread")

PROMPT = "Write a haiku about the sea."


def random_deltas(model, folder, rank=4, seed=1):
    """Wrap a copy of the model with non-zero LoRA factors (float16-exact, as saved) and save them."""
    wrapped_model = copy.deepcopy(model)
    wrapped = lora.wrap(wrapped_model, rank, 2.0 * rank, seed)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in wrapped.values():
            m.B.copy_(torch.randn(m.B.shape, generator=gen) * 0.5)
            m.A.copy_(m.A.half().float())
            m.B.copy_(m.B.half().float())
    lora.save(wrapped, folder, {"target": "tiny"})
    return wrapped_model.eval()


@pytest.fixture(scope="module")
def adapter(tmp_path_factory, tiny_loaded):
    folder = tmp_path_factory.mktemp("cllm-adapter")
    return folder, random_deltas(tiny_loaded.model, folder)


def test_merge_equals_the_wrapped_forward_and_leaves_the_base_untouched(tiny_loaded, adapter):
    folder, wrapped = adapter
    before = {k: v.clone() for k, v in tiny_loaded.model.state_dict().items()}
    tuned = lora.target_for(tiny_loaded, "cllm", {"adapter": str(folder)})
    ids = torch.tensor([[1, 50, 300, 7, 99, 1000, 42]])
    with torch.no_grad():
        want, got = wrapped(ids).logits, tuned.model(ids).logits
        base = tiny_loaded.model(ids).logits
    assert torch.allclose(got, want, atol=1e-4, rtol=1e-4)
    assert not torch.allclose(got, base, atol=1e-2)  # the deltas really changed the model
    assert all(torch.equal(v, before[k]) for k, v in tiny_loaded.model.state_dict().items())
    assert tuned.model is not tiny_loaded.model and tuned.name == "tiny + CLLM" and tuned.deltas
    assert lora.target_for(tuned, "cllm", {"adapter": str(folder)}) is tuned  # already merged: no second copy
    assert lora.target_for(tiny_loaded, "jacobi", {}) is tiny_loaded


@pytest.mark.parametrize("block", [1, 4, 16])
def test_cllm_greedy_equals_ar_on_the_fine_tuned_model(tiny_loaded, adapter, block):
    params = {"adapter": str(adapter[0]), "block": block}
    tuned = lora.target_for(tiny_loaded, "cllm", params)
    got = run(tuned, "cllm", PROMPT, params, max_new_tokens=30)
    assert got.token_ids == run(tuned, "ar", PROMPT, {}, max_new_tokens=30).token_ids
    assert got.model == "tiny + CLLM" and got.params["block"] == block


def test_cllm_refuses_the_base_model(tiny_loaded, adapter):
    with pytest.raises(InputError, match="fine-tuned copy"):
        run(tiny_loaded, "cllm", PROMPT, {"adapter": str(adapter[0])}, max_new_tokens=4)


def test_missing_or_bad_deltas_are_one_line_errors(tiny_loaded, tmp_path):
    with pytest.raises(ModelError, match="python -m paradec.train cllm") as e:
        lora.target_for(tiny_loaded, "cllm", {"adapter": str(tmp_path / "nowhere")})
    assert "\n" not in str(e.value)
    (tmp_path / lora.WEIGHTS).write_bytes(b"not a safetensors file")
    with pytest.raises(ModelError, match="not a LoRA file"):
        lora.target_for(tiny_loaded, "cllm", {"adapter": str(tmp_path)})
    other = tmp_path / "other"
    random_deltas(tiny_model(vocab_size=64, hidden=32), other)  # another model's shapes
    with pytest.raises(ModelError, match="do not fit"):
        lora.target_for(tiny_loaded, "cllm", {"adapter": str(other)})


def test_cli_names_the_training_command_when_the_deltas_are_missing(tmp_path, tiny_dir, capsys):
    code = cli.main(["run", "--method", "cllm", "--model", str(tiny_dir), "--prompt", "hi",
                     "--set", f"adapter={tmp_path}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "python -m paradec.train cllm" in err and len(err.splitlines()) == 1


def test_cli_warns_that_the_text_is_the_fine_tuned_models(tiny_dir, adapter, capsys):
    code = cli.main(["run", "--method", "cllm", "--model", str(tiny_dir), "--prompt", "hi", "--max-new-tokens", "4",
                     "--set", f"adapter={adapter[0]}"])
    err = capsys.readouterr().err
    assert code == 0 and "warning: LOSSY: cllm decodes on a fine-tuned copy of the target" in err


def test_trajectory_ends_every_block_at_the_greedy_continuation():
    model = tiny_model(32, seed=3)
    with torch.no_grad():
        model.lm_head.weight.mul_(6.0)
    prompt = [1, 5, 7, 9, 5, 7, 3]
    blocks = train_cllm.trajectory(model, prompt, 5, 4, set())
    steps = decode(model, Drafter(), prompt, 20, Sampler(), torch.Generator().manual_seed(0))
    greedy = [t for s in steps for t in s.tokens]
    assert [t for b in blocks for t in b["states"][-1]] == greedy
    for i, b in enumerate(blocks):
        assert b["start"] == len(prompt) + 5 * i and b["states"][0] == [(prompt + greedy)[b["start"] - 1]] * 5
        assert 1 <= len(b["states"]) <= 6  # each iteration fixes at least one more guess


def test_packed_row_attends_to_the_committed_text_and_its_own_state():
    row = {"prompt": [1, 2, 3], "blocks": [{"start": 3, "states": [[3, 3], [4, 9], [4, 5]]},
                                           {"start": 5, "states": [[5, 5], [6, 7]]}]}
    p = train_cllm.packed(row, 1, random.Random(0))
    assert p["tokens"][0].tolist() == [1, 2, 3, 4, 5, 6, 7, *p["tokens"][0, 7:9].tolist(), 5, 5]
    assert p["pos"][0].tolist() == [0, 1, 2, 3, 4, 5, 6, 3, 4, 5, 6]
    assert p["targets"].tolist() == [5, 6, 7, -100]  # block 1: y*[1:], then the next block's first token
    a = p["allowed"]
    assert a[7].tolist() == [1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0]
    assert a[10].tolist() == [1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1]


def test_a_short_training_run_end_to_end(tiny_loaded, tmp_path):
    model = copy.deepcopy(tiny_loaded.model)
    prompts = [[1, 50, 300, 7], [9, 8, 7, 6, 5]]
    rows = [{"prompt": p, "blocks": train_cllm.trajectory(model, p, 4, 2, set())} for p in prompts]
    wrapped, facts = train_cllm.train(model, json.loads(json.dumps(rows)), steps=4, states=2, rank=2,
                                      log=lambda m: None)
    assert facts["steps"] == 4 and all(x == x for x in facts["loss_last"])  # finite, not NaN
    assert any(m.B.abs().sum() > 0 for m in wrapped.values())  # the deltas moved off zero
    lora.save(wrapped, tmp_path, {"target": "tiny"})
    tuned = lora.target_for(tiny_loaded, "cllm", {"adapter": str(tmp_path), "block": 4})
    got = run(tuned, "cllm", PROMPT, {"adapter": str(tmp_path), "block": 4}, max_new_tokens=12)
    assert got.token_ids == run(tuned, "ar", PROMPT, {}, max_new_tokens=12).token_ids


@pytest.mark.slow
def test_embedded_cllm_equals_ar_on_the_shipped_fine_tuned_model(embedded):
    tuned = lora.target_for(embedded, "cllm", {})
    got = run(tuned, "cllm", PROMPT, {}, max_new_tokens=24)
    assert got.token_ids == run(tuned, "ar", PROMPT, {}, max_new_tokens=24).token_ids
    assert got.model == "SmolLM2-135M-Instruct + CLLM" and tuned.model is not embedded.model


def test_jacobi_page_shows_the_base_and_the_consistency_trained_grids_side_by_side():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("views/jacobi.py").run()
    assert not at.exception and not at.warning
    assert "Vanilla vs consistency-trained Jacobi" in [h.value for h in at.subheader]
    assert any("Lossless only relative to the fine-tuned model" in i.value for i in at.info)
    headers = " ".join(m.value for m in at.markdown)
    assert "jacobi on SmolLM2-135M-Instruct" in headers and "cllm on SmolLM2-135M-Instruct + CLLM" in headers


def test_bench_runs_cllm_on_its_fine_tuned_copy_next_to_jacobi(tiny_dir, adapter, tmp_path, capsys):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"prompt": "a b a b a b", "category": "copy"}))
    code = cli.main(["bench", "--methods", f"jacobi,cllm[adapter={adapter[0]}]", "--prompts", str(prompts),
                     "--model", str(tiny_dir), "--device", "cpu", "--max-new-tokens", "8", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and {"ar", "jacobi", f"cllm[adapter={adapter[0]}]"} <= set(report["methods"])


def test_the_service_serves_only_the_shipped_deltas(tiny_loaded, adapter):
    from paradec.serving.serve import RunRequest, Service

    service = Service({"tiny": tiny_loaded})
    with pytest.raises(InputError, match="is not served here: the shipped weights"):
        service.run(RunRequest(method="cllm", prompt="hi", params={"adapter": str(adapter[0])}))
