"""Loading targets and drafts: the embedded SmolLM2-135M-Instruct and any Hugging Face causal LM by id or local
path. The package hands on the names its modules define: loaded.py (Loaded, ModelError, the fast CPU forward),
devices.py, loading.py (load), embedded.py (the GGUF converted once), drafts.py (load_draft), prompts.py."""
from .devices import DEVICES, DTYPES, free_memory, pick_device, pick_dtype
from .drafts import TRAINED, default_draft, draft_for, load_draft, truncated
from .embedded import EMBEDDED, EMBEDDED_GGUF, EMBEDDED_NAME, EMBEDDED_PACKAGE, embedded_path
from .loaded import Loaded, ModelError, with_fast
from .loading import load
from .prompts import encode_prompt, eos_ids

__all__ = ["DEVICES", "DTYPES", "EMBEDDED", "EMBEDDED_GGUF", "EMBEDDED_NAME", "EMBEDDED_PACKAGE", "TRAINED", "Loaded",
           "ModelError", "default_draft", "draft_for", "embedded_path", "encode_prompt", "eos_ids", "free_memory",
           "load", "load_draft", "pick_device", "pick_dtype", "truncated", "with_fast"]
