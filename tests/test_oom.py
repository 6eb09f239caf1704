"""Out of memory on a GPU preset, faked on the CPU: a tiny model whose forward raises torch's
out-of-memory error half way through a run. The run gives one line (run, CLI exit 2, the
service's 507, the app's error types), its KV cache is gone before the CUDA allocator is
emptied, and the next run on the same model gives what it gives alone."""
from __future__ import annotations

import weakref
from dataclasses import replace

import pytest
import torch
from test_load import serving
from test_serve import post, untimed
from transformers import Cache

from paradec import cli, models, run
from paradec.run import OUT_OF_MEMORY, OutOfMemory
from paradec.serving import serve

pytestmark = pytest.mark.usefixtures("one_thread")

REQUEST = {"method": "pld", "prompt": "the cat sat on the mat, the cat sat on", "max_new_tokens": 10,
           "params": {"k": 3}}


class RunsOutOfMemory:
    """The tiny model, except that once armed its third forward raises the error CUDA raises
    (the KV cache holds the prompt by then) and disarms. It keeps a weak reference to every
    KV cache it is handed, so a test can see whether the failed run's cache was freed."""

    def __init__(self, model):
        self.model, self.armed, self.forwards, self.caches = model, False, 0, []

    def __call__(self, **kwargs):
        self.caches += [weakref.ref(v) for v in kwargs.values() if isinstance(v, Cache)]
        self.forwards += 1
        if self.armed and self.forwards >= 3:
            self.armed = False
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return self.model(**kwargs)

    def __getattr__(self, name):  # config, device, dtype, generation_config: the tiny model's
        return getattr(self.model, name)

    def arm(self) -> None:
        self.armed, self.forwards, self.caches = True, 0, []

    def caches_alive(self) -> int:
        return sum(ref() is not None for ref in self.caches)


@pytest.fixture
def failing(tiny_loaded):
    wrapper = RunsOutOfMemory(tiny_loaded.model)
    return wrapper, replace(tiny_loaded, model=wrapper, fast=None, name="oom-tiny")  # a GPU runs the model


def run_request(loaded):
    r = REQUEST
    return run.run(loaded, r["method"], r["prompt"], r["params"], r["max_new_tokens"])


@pytest.fixture
def fake_cuda(monkeypatch, failing):
    """torch.cuda as a GPU machine has it; empty_cache records how many KV caches were alive."""
    alive_at_empty = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: alive_at_empty.append(failing[0].caches_alive()))
    return alive_at_empty


def test_out_of_memory_is_one_line_after_the_memory_is_freed(failing, fake_cuda, tiny_loaded):
    wrapper, loaded = failing
    alone = run_request(tiny_loaded)
    wrapper.arm()
    with pytest.raises(OutOfMemory) as e:
        run_request(loaded)
    assert str(e.value) == OUT_OF_MEMORY and "\n" not in OUT_OF_MEMORY
    assert wrapper.caches and fake_cuda == [0]  # the cache was gone before empty_cache ran
    from ui import live

    assert isinstance(e.value, live.errors())  # the app shows it in an error box
    again = run_request(loaded)  # the same model, right after
    assert untimed(again.to_dict()) == untimed(replace(alone, model="oom-tiny").to_dict())


def test_the_command_line_exits_2_with_the_line(failing, fake_cuda, monkeypatch, capsys):
    wrapper, loaded = failing
    monkeypatch.setattr(models, "load", lambda spec, device, dtype, fast=True, weights="f32": loaded)
    wrapper.arm()
    code = cli.main(["run", "--method", "pld", "--prompt", REQUEST["prompt"], "--max-new-tokens", "10"])
    assert (code, capsys.readouterr().err) == (2, f"paradec: error: {OUT_OF_MEMORY}\n")
    assert cli.main(["run", "--method", "pld", "--prompt", REQUEST["prompt"], "--max-new-tokens", "10"]) == 0


def test_the_service_answers_507_and_then_runs_again(failing, fake_cuda, tiny_loaded):
    wrapper, loaded = failing
    alone = replace(run_request(tiny_loaded), model="oom-tiny")
    service = serve.Service({loaded.name: loaded}, queue=2)
    with serving(service) as url:
        wrapper.arm()
        status, answer, _ = post(url, REQUEST)
        assert (status, answer) == (507, {"error": OUT_OF_MEMORY}) and fake_cuda == [0]
        assert service.queues()[loaded.name]["running"] is False  # the turn was given back
        status, body, _ = post(url, REQUEST)
        assert status == 200 and untimed(body) == untimed(alone.to_dict())


def test_a_model_too_big_for_the_device_is_one_line(tiny_dir, monkeypatch):
    """Moving the weights runs out of memory: a one-line ModelError, the memory given back first."""
    from paradec import models

    def full(self, *a, **k):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    freed = []
    monkeypatch.setattr(torch.nn.Module, "to", full)  # a test stands in for a full GPU
    monkeypatch.setattr(models.devices, "free_memory", lambda: freed.append(True))
    with pytest.raises(models.ModelError, match="out of memory on cpu") as e:
        models.load(str(tiny_dir), "cpu")
    assert "\n" not in str(e.value) and freed == [True]
