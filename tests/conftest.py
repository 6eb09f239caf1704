"""Shared fixtures: tiny random models (milliseconds a pass), the embedded tokenizer and
model (session-scoped: loaded once), and a tiny model saved as a local model folder.

The tiny-model tests run torch on one thread (fixture `one_thread`): their tensors are
so small that OpenMP's thread hand-offs dominate, and on a busy 2-core machine a second
thread waiting for a descheduled core made them 20-50x slower."""
from __future__ import annotations

import pytest
import torch

# The modules that take longest (seconds of one worker, make test), handed to the workers first (make test and make
# check pass --no-loadscope-reorder: xdist would otherwise hand out the modules with the most tests first): in file
# order the last ones came last, and one worker ran them alone at the end while the other waited. The browser's
# modules are serial (pytest.ini): first in make test's clocked tier, absent from the other.
LONGEST = ("test_ui_browser.py", "test_learn_browser.py", "test_site.py", "test_sampling_e2e.py", "test_sampling.py",
           "test_embedded.py", "test_quant_embedded.py", "test_hostile_app.py", "test_batch.py", "test_eagle.py",
           "test_mirror.py", "test_draft_length_trees.py", "test_app_imports.py", "test_hostile_outputs.py",
           "test_load.py", "test_trace_fuzz.py")


def pytest_addoption(parser):
    parser.addoption("--require-tools", action="store_true",
                     help="a test whose tool (browser, compiler) is missing fails instead of skipping (make test, CI)")


def pytest_configure(config):
    import helpers

    helpers.REQUIRE_TOOLS[0] = config.getoption("--require-tools")


def pytest_collection_modifyitems(items):
    rank = {name: k for k, name in enumerate(LONGEST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONGEST)))  # stable: the rest keep their order


@pytest.fixture(scope="session", autouse=True)
def components_scanned_once():
    """Every AppTest scans all installed packages' metadata for Streamlit components (0.3 s, about a
    fifth of opening a page); the packages cannot change during a test run, so the scan runs once."""
    import functools

    from streamlit.components.v2 import manifest_scanner

    real = manifest_scanner.scan_component_manifests
    manifest_scanner.scan_component_manifests = functools.cache(real)
    yield
    manifest_scanner.scan_component_manifests = real


@pytest.fixture(scope="module")
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tokenizer():
    """The embedded model's tokenizer as paradec reads it: from the GGUF file once (5 s), then from paradec's cache
    (a quarter of a second, in every later test process). No weights are converted, so the fast tier (make check)
    never builds the embedded model."""
    from paradec.models.gguf import gguf_file, tokenizer

    return tokenizer(gguf_file(None), embedded=True)


@pytest.fixture(scope="session")
def tiny_loaded(tokenizer):
    """A tiny random Llama over the embedded tokenizer's vocabulary, as paradec.models.load gives it (with
    the fast CPU forward)."""
    from paradec.models import Loaded, with_fast

    from helpers import tiny_model

    return with_fast(Loaded(tiny_model(vocab_size=len(tokenizer)), tokenizer, "tiny", "cpu", "float32"))


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory, tiny_loaded):
    """That tiny model saved as a local model folder (what --model DIR loads)."""
    path = tmp_path_factory.mktemp("tiny-model")
    tiny_loaded.model.save_pretrained(path)
    tiny_loaded.tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def embedded():
    """On the CPU in float32 even where a GPU exists: greedy equality is exact only there."""
    from paradec.models import load

    return load(device="cpu", dtype="float32")


@pytest.fixture(scope="session")
def embedded_q4():
    """The embedded model as its GGUF ships, at 4 bits (paradec.cpu.quant): loaded in seconds, once."""
    from paradec.models import load

    return load(device="cpu", dtype="float32", weights="q4")
