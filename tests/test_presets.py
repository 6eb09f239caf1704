"""GPU presets filtered by (fake) device properties, the device profile, the vocabulary check on
local tokenizer folders, and the hub's failures as one-line messages (offline, gated, missing)."""
from __future__ import annotations

import json

import pytest

from paradec import catalog
from paradec.models import hub
from paradec.tuning import presets
from paradec.tuning.presets import DeviceInfo, Model

from helpers import APP

GiB = 2**30
H100 = DeviceInfo("cuda", "NVIDIA H100 80GB HBM3", 80 * GiB, (9, 0), 132)
A100 = DeviceInfo("cuda", "NVIDIA A100-SXM4-40GB", 40 * GiB, (8, 0), 108)
RTX4090 = DeviceInfo("cuda", "NVIDIA GeForce RTX 4090", 24 * GiB, (8, 9), 128)
T4 = DeviceInfo("cuda", "Tesla T4", 15 * GiB, (7, 5), 40)
SMALL = DeviceInfo("cuda", "NVIDIA GeForce GTX 1660", 6 * GiB, (7, 5), 22)
CPU = DeviceInfo("cpu", "2-core CPU", 0, processors=2)


def names(info):
    return [p.target.repo.split("/")[1] for p in presets.available(info)]


def test_an_80gb_h100_sees_every_preset():
    assert len(presets.available(H100)) == len(presets.PRESETS) == 4


def test_a_24gb_card_sees_the_7b_8b_presets_a_16gb_card_only_smollm2():
    assert names(RTX4090) == ["SmolLM2-1.7B-Instruct", "Qwen2.5-7B-Instruct", "vicuna-7b-v1.3", "Llama-3.1-8B-Instruct"]
    assert names(T4) == ["SmolLM2-1.7B-Instruct"]
    assert names(SMALL) == []


def test_a_cpu_or_an_apple_gpu_sees_none_and_is_told_what_is_needed():
    assert presets.available(CPU) == []
    assert presets.available(DeviceInfo("mps", "Apple GPU", 64 * GiB)) == []
    assert presets.requirement().startswith("GPU presets need a CUDA GPU: ")


def test_memory_is_bf16_weights_plus_kv_cache_plus_overhead():
    smol = presets.PRESETS[0]
    weights = (1.71 + 0.135 + 0.362) * 1e9 * 2
    kv = 4096 * (2 * 24 * 32 * 64 * 2 + 2 * 30 * 3 * 64 * 2 + 2 * 32 * 5 * 64 * 2)
    assert smol.memory_bytes == pytest.approx(weights + kv + 2 * GiB, rel=1e-6)
    big = max(p.memory_bytes for p in presets.PRESETS)
    assert 16 * GiB < big < 0.9 * 24 * GiB


def test_presets_name_their_drafts_heads_and_gates():
    by_target = {p.target.repo: p for p in presets.PRESETS}
    smol = by_target["HuggingFaceTB/SmolLM2-1.7B-Instruct"]
    assert [m.repo for m in smol.role("draft")] == ["HuggingFaceTB/SmolLM2-135M-Instruct",
                                                   "HuggingFaceTB/SmolLM2-360M-Instruct"]
    vicuna = by_target["lmsys/vicuna-7b-v1.3"]
    assert vicuna.role("medusa")[0].repo == "FasterDecoding/medusa-vicuna-7b-v1.3"
    assert vicuna.role("eagle")[0].repo == "yuhuili/EAGLE-Vicuna-7B-v1.3"
    llama = by_target["meta-llama/Llama-3.1-8B-Instruct"]
    assert llama.role("eagle3")[0].repo == "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
    assert [p.gated for p in presets.PRESETS] == [False, False, False, True]


def test_the_profile_follows_the_device():
    cpu, h100, t4 = (presets.device_profile(d) for d in (CPU, H100, T4))
    assert (cpu.dtype, h100.dtype, t4.dtype) == ("float32", "bfloat16", "float16")  # a T4 has no bf16
    assert presets.device_profile(DeviceInfo("mps", "Apple GPU", 0)).dtype == "float16"
    assert (cpu.verify_tokens, presets.device_profile(A100).verify_tokens, h100.verify_tokens, t4.verify_tokens) \
        == (11, 54, 64, 20)
    # on a CPU: the tuned preset's settings where it has some (assets/presets/cpu.json, a tune run on this
    # CPU), and for the rest the drafters' own defaults, sized for a dozen tokens a pass
    tuned = json.loads((presets.TUNED / "cpu.json").read_text())["methods"]
    assert all(cpu.params(m) == tuned[m] for m in ("lookahead", "eagle3", "sps", "medusa"))
    assert cpu.source.startswith("tuned: python -m paradec tune")
    assert cpu.params("eagle2") == {"depth": 4, "top_k": 4, "total_tokens": 11}
    assert cpu.params("eagle") == {} and cpu.params("pld") == {}  # not tuned: the drafters' own defaults
    assert h100.params("lookahead") == {"window": 8, "ngram": 5, "candidates": 8}
    assert h100.params("eagle3") == {"depth": 6, "top_k": 10, "total_tokens": 64}
    assert h100.params("medusa") == {"tree": "mc_sim_7b_63"} and t4.params("medusa") == {"tree": "wide16"}
    assert h100.params("sps") == {"k": 6} and cpu.params("pld") == {}


def test_runs_take_their_sizes_from_the_device(tiny_loaded, monkeypatch):
    """What a run leaves out is sized for its device; what it gives wins."""
    from paradec.run import run

    monkeypatch.setattr(presets, "device_info", lambda device: H100)  # a test stands in for the GPU
    assert run(tiny_loaded, "lookahead", "Hi", max_new_tokens=2).params == {"window": 8, "ngram": 5, "candidates": 8}
    assert run(tiny_loaded, "lookahead", "Hi", ["window=3"], max_new_tokens=2).params["window"] == 3


def test_the_runner_sizes_for_the_device_what_a_request_leaves_out(tiny_loaded, monkeypatch):
    """Every entry point (CLI, bench, service, app) decodes through the runner: a request that names no
    parameter gets the device's sizes, not the catalog's defaults; a parameter it names wins."""
    from paradec.runner import Request, Runner

    monkeypatch.setattr(presets, "device_info", lambda device: H100)
    runner = Runner(loaded={"tiny": tiny_loaded})
    sized = runner.decode(Request("lookahead", "Hi", max_new_tokens=2)).params
    assert sized == {"window": 8, "ngram": 5, "candidates": 8}
    assert runner.decode(Request("lookahead", "Hi", {"window": 3}, max_new_tokens=2)).params["window"] == 3
    assert runner.decode(Request("lookahead", "Hi", ["ngram=3"], max_new_tokens=2)).params["ngram"] == 3


def test_device_info_reads_this_machine_cpu():
    info = presets.device_info("cpu")
    assert info.kind == "cpu" and info.processors >= 1 and info.memory_bytes == 0 and not info.bf16


@pytest.fixture(scope="module")
def tokenizer_dirs(tmp_path_factory, tokenizer):
    """The embedded tokenizer saved three times: twice as it is, once with one extra token."""
    import copy

    root = tmp_path_factory.mktemp("tokenizers")
    tok = copy.deepcopy(tokenizer)  # the session's tokenizer stays as it is
    tok.save_pretrained(root / "original")
    tok.save_pretrained(root / "same")
    tok.add_tokens(["<paradec-extra-token>"])
    tok.save_pretrained(root / "extra")
    return root / "original", root / "same", root / "extra"


def test_vocab_check_accepts_the_same_tokenizer_and_names_the_difference(tokenizer_dirs):
    original, same, extra = tokenizer_dirs
    assert hub.vocab_mismatch(original, same) == ""
    assert hub.vocab_mismatch(original, extra) == ("different vocabularies: 0 tokens only in the target, "
                                                   "1 only in the draft, 0 with other ids")


def test_offline_hub_gives_one_line(monkeypatch, tmp_path):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # read once, at import
    with pytest.raises(hub.HubError) as e:
        hub.download(presets.PRESETS[0].role("draft")[0], cache_dir=tmp_path)
    assert str(e.value) == ("cannot reach the Hugging Face hub to fetch HuggingFaceTB/SmolLM2-135M-Instruct, and it "
                            "is not in the local cache (offline, or HF_HUB_OFFLINE is set)")


def _refusing(error_class, status: int):
    import httpx2

    response = httpx2.Response(status, request=httpx2.Request("GET", "https://huggingface.co/api/models/x"))

    def snapshot_download(*args, **kwargs):
        raise error_class("refused", response=response)

    return snapshot_download


@pytest.mark.parametrize("error, status, message", [
    ("GatedRepoError", 403, "org/model is gated: accept its licence on https://huggingface.co/org/model and log in "
                            "(hf auth login) or set HF_TOKEN"),
    ("RepositoryNotFoundError", 404, "org/model does not exist on the Hugging Face hub "
                                     "(or is private and needs a token)"),
])
def test_gated_and_missing_repos_give_one_line(monkeypatch, error, status, message):
    import huggingface_hub
    import huggingface_hub.errors

    monkeypatch.setattr(huggingface_hub, "snapshot_download", _refusing(getattr(huggingface_hub.errors, error), status))
    with pytest.raises(hub.HubError) as e:
        hub.download(Model("org/model", "target", 1.0))
    assert str(e.value) == message


def test_progress_hook_sees_every_byte_update():
    seen = []
    reporting = hub.progress_class(lambda what, done, total: seen.append((what, done, total)))
    files = reporting(total=4, desc="Fetching 4 files")
    size = reporting(total=10, desc="Downloading bytes", unit="B")
    for bar, n in ((size, 3), (files, 1), (size, 7)):
        bar.update(n)
    files.close()
    size.close()
    assert seen == [("Downloading bytes", 3.0, 10.0), ("Downloading bytes", 10.0, 10.0)]  # bytes only


def live_app():
    """The whole app in live mode, on this machine's device."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["sb.source"] = "live"
    return at.run()


def preset_section():
    """The sidebar's preset section alone, under the model input it fills (AppTest drops a
    navigation app's sidebar after a rerun, so the section is tested on its own)."""
    import streamlit as st

    from ui import gpu_presets

    gpu_presets.use_fetched_model()
    st.text_input("Target model", "embedded", key="sb.model")
    gpu_presets.render()


def section_on(monkeypatch, device: DeviceInfo, fetch, choice: str | None = None):
    from streamlit.testing.v1 import AppTest

    from ui import live

    monkeypatch.setattr(live, "device_info", lambda: device)
    monkeypatch.setattr(live, "fetch", fetch)
    at = AppTest.from_function(preset_section, default_timeout=60)
    if choice:
        at.session_state["sb.gpu_preset"] = choice
    return at.run()


def captions(at) -> str:
    return "\n".join(c.value for c in at.caption)


def test_sidebar_on_this_cpu_says_what_the_presets_need():
    at = live_app()
    assert not at.exception and not [s for s in at.sidebar.selectbox if s.key == "sb.gpu_preset"]
    assert "GPU presets need a CUDA GPU" in "\n".join(c.value for c in at.sidebar.caption)


def test_sidebar_on_a_gpu_offers_what_fits_and_fetches_into_the_model(monkeypatch):
    from ui import gpu_presets

    fetched = {"target": ["/hub/smol-1.7b"], "draft": ["/hub/smol-135m", "/hub/smol-360m"]}
    at = section_on(monkeypatch, T4, lambda preset, progress: fetched)
    assert at.selectbox(key="sb.gpu_preset").options == [gpu_presets.NONE, presets.PRESETS[0].name]  # 16 GB
    at.selectbox(key="sb.gpu_preset").set_value(presets.PRESETS[0].name).run()
    assert "in float16" in captions(at)  # a T4 has no bfloat16
    at.button(key="sb.gpu_fetch").click().run()
    assert not at.exception
    assert at.text_input(key="sb.model").value == "HuggingFaceTB/SmolLM2-1.7B-Instruct"
    assert "sps draft (type it on its page): /hub/smol-360m" in captions(at)
    assert "medusa tree=wide16" in captions(at)


def test_sidebar_shows_a_hub_failure_in_one_line(monkeypatch):
    def offline(preset, progress):
        raise hub.HubError("cannot reach the Hugging Face hub")

    at = section_on(monkeypatch, H100, offline, presets.PRESETS[1].name)
    assert len(at.selectbox(key="sb.gpu_preset").options) == 5
    at.button(key="sb.gpu_fetch").click().run()
    assert [e.value for e in at.error] == ["cannot reach the Hugging Face hub"]
    assert at.text_input(key="sb.model").value == "embedded"


def test_page_controls_open_on_the_devices_sizes(monkeypatch):
    """Replaying: the settings tuned for the CPU that recorded the runs; live: the device profile's where it has
    one."""
    from types import SimpleNamespace

    from ui import live, sizing

    monkeypatch.setattr(sizing, "current", lambda: SimpleNamespace(live=False))
    cpu = sizing.defaults("eagle3")
    tuned = presets.tuned("cpu")[0]["eagle3"]
    assert {k: cpu[k] for k in tuned} == tuned and cpu["head"] == catalog.method("eagle3").defaults()["head"]
    monkeypatch.setattr(sizing, "current", lambda: SimpleNamespace(live=True))
    monkeypatch.setattr(live, "device_info", lambda: H100)
    assert sizing.defaults("eagle3") == {**cpu, "depth": 6, "top_k": 10, "total_tokens": 64}
    assert sizing.defaults("medusa")["tree"] == "mc_sim_7b_63"
