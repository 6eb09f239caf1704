"""Model loading safety: no code runs from downloaded or uploaded files (never
trust_remote_code, never a plain unpickle), and the converted-model cache is trusted only
when complete: a missing or half-written one is rebuilt, a failed conversion leaves nothing
behind. The conversion runs on a tiny model (the GGUF reader is replaced), never the real one."""
import re
from pathlib import Path

import pytest

from paradec import models
from paradec.cache import cache_dir

from helpers import tiny_model

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for d in ("paradec", "ui", "views", "scripts") for p in (ROOT / d).rglob("*.py")) + [ROOT / "app.py"]
# What no linter rule says (pickle, dill, shelve and joblib are ruff's TID251 and S301: ruff.toml).
REMOTE_CODE = re.compile(r"trust_remote_code\s*=\s*True")  # runs the model repository's own Python
NUMPY_PICKLE = re.compile(r"allow_pickle\s*=\s*True")  # numpy unpickles object arrays


def _calls(text: str, name: str):
    """The argument text of every call `name(...)` (parentheses balanced, over lines)."""
    for m in re.finditer(re.escape(name) + r"\(", text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        yield text[m.end() : i - 1]


def unsafe_loads(text: str) -> list[str]:
    """Code that would run what a downloaded or uploaded file holds."""
    found = [m.group(0) for pattern in (REMOTE_CODE, NUMPY_PICKLE) for m in pattern.finditer(text)]
    return found + [f"torch.load({args})" for args in _calls(text, "torch.load")
                    if not re.search(r"weights_only\s*=\s*True", args)]


def test_no_code_execution_when_loading():
    assert len(SOURCES) > 30 and ROOT / "paradec" / "models" / "__init__.py" in SOURCES
    found = {str(p.relative_to(ROOT)): unsafe_loads(p.read_text(encoding="utf-8")) for p in SOURCES}
    assert not {k: v for k, v in found.items() if v}


def test_the_check_catches_what_it_should():
    assert unsafe_loads("m = load(x, trust_remote_code = True)\nw = torch.load(f,\n map_location='cpu')\n"
                        "a = np.load(f, allow_pickle=True)") == [
        "trust_remote_code = True", "allow_pickle=True", "torch.load(f,\n map_location='cpu')"]
    assert unsafe_loads("w = torch.load(f, map_location=dev, weights_only=True)\ntrust_remote_code=False") == []


@pytest.fixture
def fake_gguf(monkeypatch, tmp_path, tiny_loaded):
    """The cache under tmp_path, and the conversion's reads of the GGUF file (its tensors, its tokenizer) replaced
    by the tiny model's; records calls. A call may be told to fail (a conversion killed half way)."""
    from paradec.cpu import gguf_file
    from paradec.models import embedded

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls, fail = [], []

    class TinyFile:
        def __init__(self, path):
            assert Path(path).name == models.EMBEDDED_GGUF  # only the conversion's own read is replaced
            calls.append(path)
            if fail:
                raise RuntimeError("killed")
            self.model = tiny_model(vocab_size=len(tiny_loaded.tokenizer))
            self.config = self.model.config

    monkeypatch.setattr(gguf_file, "GGUFModel", TinyFile)
    monkeypatch.setattr(embedded, "_float32_state", lambda f: f.model.state_dict())
    monkeypatch.setattr(embedded, "embedded_tokenizer", lambda path: tiny_loaded.tokenizer)
    return calls, fail


def _cache() -> Path:
    return cache_dir() / "smollm2-135m-instruct-f32"


def test_half_written_cache_is_rebuilt(fake_gguf):
    calls, _ = fake_gguf
    half = _cache()
    half.mkdir(parents=True)
    (half / "config.json").write_text("{")  # an interrupted save: no completion marker
    (half / "stale.bin").write_bytes(b"\0" * 10)
    assert models.embedded_path() == half
    assert len(calls) == 1
    assert (half / "complete").exists() and not (half / "stale.bin").exists()
    assert (half / "model.safetensors").exists() and '"vocab_size"' in (half / "config.json").read_text()
    models.embedded_path()  # complete now: trusted, not converted again
    assert len(calls) == 1


def test_failed_conversion_leaves_nothing_and_the_next_one_works(fake_gguf):
    calls, fail = fake_gguf
    fail.append(True)
    with pytest.raises(RuntimeError, match="killed"):
        models.embedded_path()
    assert not _cache().exists()
    assert not list(_cache().parent.glob(".convert-*"))  # no temporary folder left either
    fail.clear()
    assert (models.embedded_path() / "complete").exists() and len(calls) == 2


def test_a_cache_completed_meanwhile_is_kept(fake_gguf, monkeypatch):
    """Two processes converting at once: the one that finishes second keeps the first's copy
    (which the first may already be reading) and drops its own."""
    from paradec.models import embedded

    state = embedded._float32_state

    def other_process_finishes_first(f):
        _cache().mkdir(parents=True)
        (_cache() / "complete").write_text("the other process")
        return state(f)

    monkeypatch.setattr(embedded, "_float32_state", other_process_finishes_first)
    path = models.embedded_path()
    assert (path / "complete").read_text() == "the other process"
    assert not list(path.parent.glob(".convert-*"))
