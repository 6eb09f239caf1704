"""GPU presets: real targets with their drafts and heads on the Hugging Face hub, shown only on
a device where they fit, and the device profile: everything that depends on the device (dtype,
how many tokens one verify pass should carry, and the tree sizes that follow) chosen from the
device's own properties rather than hard-coded.

Pure data and functions; torch is imported only by device_info(), which reads the device."""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

from .. import catalog
from ..core.tree import MEDUSA_TREES

GB = 10**9
CONTEXT_TOKENS = 4096  # the KV cache is budgeted for a 4k-token context (prompt + answer)
OVERHEAD_BYTES = 2 * 2**30  # CUDA context, activations of a verify pass, allocator slack
USABLE = 0.9  # leave a tenth of the card to the driver and other processes
TEXT_FILES = ("*.json", "*.safetensors", "tokenizer*", "*.model", "*.txt")
# A device kind's tuned settings (python -m paradec tune --preset-out), when one is shipped: they replace the
# sizes below for the methods they cover, and the profile names the run they came from (Profile.source).
TUNED = Path(__file__).resolve().parents[2] / "assets" / "presets"


@dataclass(frozen=True)
class Model:
    repo: str  # Hugging Face id
    role: str  # target, draft (for sps), medusa, eagle (EAGLE-1/2 head) or eagle3
    params_b: float  # parameters in billions (model card / config)
    kv_bytes_per_token: int = 0  # 2 (K, V) * layers * KV heads * head dim * 2 bytes (bf16); 0 for heads
    files: tuple[str, ...] = TEXT_FILES  # what to download (the repos also hold other formats)
    gated: bool = False  # the licence must be accepted on the hub, and a token used

    @property
    def weight_bytes(self) -> int:
        return int(self.params_b * GB * 2)  # bf16 / fp16: two bytes a parameter


def _kv(layers: int, kv_heads: int, head_dim: int) -> int:
    return 2 * layers * kv_heads * head_dim * 2


@dataclass(frozen=True)
class Preset:
    name: str
    models: tuple[Model, ...]  # the target first
    note: str = ""

    @property
    def target(self) -> Model:
        return self.models[0]

    def role(self, role: str) -> list[Model]:
        return [m for m in self.models if m.role == role]

    @property
    def methods(self) -> tuple[str, ...]:
        """What the preset runs besides AR: every method that needs no weights, or reads one of its models
        (paradec.catalog: a method's needs and the preset model it uses)."""
        roles = {m.role for m in self.models}
        return tuple(m.name for m in catalog.METHODS.values()
                     if m.family != "baseline" and (m.uses in roles if m.uses else not m.needs))

    @property
    def gated(self) -> bool:
        return any(m.gated for m in self.models)

    @property
    def memory_bytes(self) -> int:
        """bf16 weights of every model (all are loaded together) + their KV caches at
        CONTEXT_TOKENS + OVERHEAD_BYTES."""
        kv = sum(m.kv_bytes_per_token for m in self.models) * CONTEXT_TOKENS
        return sum(m.weight_bytes for m in self.models) + kv + OVERHEAD_BYTES


# Parameter counts and layer shapes from the models' config.json files; the heads' counts from
# their layers (Medusa: 5 heads of a 4096x4096 residual block and a 4096x32000 LM head; EAGLE-1:
# one decoder layer and a 8192->4096 fc; EAGLE-3: one decoder layer over 2x4096 inputs, a
# 3x4096->4096 fc and a 32000-token draft LM head).
PRESETS = (
    Preset("SmolLM2-1.7B-Instruct + 135M / 360M drafts", (
        Model("HuggingFaceTB/SmolLM2-1.7B-Instruct", "target", 1.71, _kv(24, 32, 64)),
        Model("HuggingFaceTB/SmolLM2-135M-Instruct", "draft", 0.135, _kv(30, 3, 64)),
        Model("HuggingFaceTB/SmolLM2-360M-Instruct", "draft", 0.362, _kv(32, 5, 64)),
    )),
    Preset("Qwen2.5-7B-Instruct + 0.5B draft", (
        Model("Qwen/Qwen2.5-7B-Instruct", "target", 7.62, _kv(28, 4, 128)),
        Model("Qwen/Qwen2.5-0.5B-Instruct", "draft", 0.494, _kv(24, 2, 64)),
    ), "same tokenizer; the 7B's embedding has 152,064 rows against the 0.5B's 151,936 (padding: q is 0 there)"),
    Preset("Vicuna-7B-v1.3 + Medusa heads + EAGLE head", (
        Model("lmsys/vicuna-7b-v1.3", "target", 6.74, _kv(32, 32, 128), (*TEXT_FILES, "*.bin")),
        Model("FasterDecoding/medusa-vicuna-7b-v1.3", "medusa", 0.739, files=("*.json", "medusa_lm_head.*")),
        Model("yuhuili/EAGLE-Vicuna-7B-v1.3", "eagle", 0.236, files=("*.json", "*.bin", "*.safetensors")),
    )),
    Preset("Llama-3.1-8B-Instruct + EAGLE-3 head", (
        Model("meta-llama/Llama-3.1-8B-Instruct", "target", 8.03, _kv(32, 8, 128), gated=True),
        Model("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "eagle3", 0.425, files=("*.json", "*.bin", "*.safetensors")),
    ), "gated: accept Meta's licence on the hub and set HF_TOKEN"),
)


@dataclass(frozen=True)
class DeviceInfo:
    """What the presets and the profile need to know about a device."""

    kind: str  # cuda, mps or cpu
    name: str
    memory_bytes: int  # the device's own memory (0 on a CPU: the presets need a GPU)
    capability: tuple[int, int] = (0, 0)  # CUDA compute capability
    processors: int = 0  # streaming multiprocessors on CUDA, cores on a CPU

    @property
    def bf16(self) -> bool:
        return self.kind == "cuda" and self.capability >= (8, 0)  # Ampere and later


def device_info(device: str) -> DeviceInfo:
    """Read a device's properties ('cuda', 'cuda:1', 'mps', 'cpu')."""
    kind = device.split(":")[0]
    if kind == "cpu":
        from ..costs.machine import cpu_name

        return DeviceInfo("cpu", cpu_name(), 0, processors=os.cpu_count() or 1)
    import torch

    if kind == "mps":
        return DeviceInfo("mps", "Apple GPU", torch.mps.recommended_max_memory())
    p = torch.cuda.get_device_properties(torch.device(device))
    return DeviceInfo("cuda", p.name, p.total_memory, (p.major, p.minor), p.multi_processor_count)


def fits(preset: Preset, info: DeviceInfo) -> bool:
    # CUDA only: the heads and tree attention are untested on Apple GPUs, and a CPU would take
    # minutes per answer for a 7B model.
    return info.kind == "cuda" and preset.memory_bytes <= USABLE * info.memory_bytes


def available(info: DeviceInfo) -> list[Preset]:
    """The presets that fit on this device."""
    return [p for p in PRESETS if fits(p, info)]


def requirement() -> str:
    """One line saying what hardware the presets need."""
    small = min(PRESETS, key=lambda p: p.memory_bytes)
    big = max(PRESETS, key=lambda p: p.memory_bytes)
    return (f"GPU presets need a CUDA GPU: {_gib(small.memory_bytes / USABLE)} for {small.target.repo.split('/')[1]}, "
            f"{_gib(big.memory_bytes / USABLE)} for all of them")


def _gib(n: float) -> str:
    return f"{n / 2**30:.0f} GiB"


def dtype_for(info: DeviceInfo) -> str:
    """bfloat16 where the GPU computes in it (CUDA from Ampere on), float16 on older CUDA cards
    and Apple GPUs, float32 on a CPU (exact greedy equality, and CPUs are not faster in 16 bits)."""
    if info.kind == "cpu":
        return "float32"
    return "bfloat16" if info.bf16 else "float16"


# Drafted tokens a CPU verify pass carries at about the cost of a one-token pass: with the pending token,
# 12 rows, which paradec's kernel multiplies in one register block with AVX-512 and in two with AVX2 (measured
# on the embedded model, 2 cores: Zen 5 1 row 19.0 ms, 8 rows 21.5, 12 rows 22.0, 13 rows 23.4, 16 rows 26.2;
# Zen 3 8 and 12 rows 1.2x one row, 13 rows 1.47x). Hugging Face's forward: 2 rows cost 1.6x.
CPU_VERIFY = 11


def verify_budget(info: DeviceInfo) -> int:
    """How many tokens one verify pass may carry while it costs about as much as a one-token pass."""
    if info.kind == "cuda":
        # A decode step streams every weight once and leaves most multiprocessors idle; extra
        # tokens fill them almost for free until their tiles outnumber the SMs. Half the SM count
        # reproduces the published GPU choices (EAGLE-2: 60 tokens on an A100's 108 SMs; Medusa's
        # 63-node tree), kept between 16 (small cards) and 64.
        return max(16, min(64, info.processors // 2))
    if info.kind == "mps":
        return 16  # not measured: an Apple GPU sits between a CPU and a small CUDA card
    # A CPU runs out of compute sooner: past a register block of rows, each pass over the weights adds
    # its multiply-adds (see CPU_VERIFY), so about a dozen.
    return CPU_VERIFY


@dataclass(frozen=True)
class Profile:
    """Everything device-dependent, chosen from a DeviceInfo by device_profile()."""

    dtype: str
    verify_tokens: int
    tuned: dict = field(default_factory=dict)  # method -> settings from the shipped tuned preset of this kind
    source: str = "sized from the verify budget"  # or the tune run the tuned settings came from

    def params(self, method: str) -> dict:
        """Tree and draft sizes for a method, sized to the verify budget ({} for the others)."""
        b = self.verify_tokens
        ngram = 3 if b < 32 else 5  # longer n-grams pay only when the pass has room for their rows
        side = b // (2 * (ngram - 1))  # window and candidates share the pass: (W + G)(N - 1) tokens
        eagle = {"depth": 4 if b < 32 else 6, "top_k": max(4, b // 6), "total_tokens": b}
        table = {
            # acceptance decays geometrically along a chain: past ~6 drafts the extra ones rarely land
            "sps": {"k": 4 if b < 32 else 6},
            "lookahead": {"window": max(4, side), "ngram": ngram, "candidates": max(2, side)},
            # up to a CPU's budget the heads' own tree (sized from costs measured at training) is kept
            "medusa": {"tree": _largest_tree(b)} if b > CPU_VERIFY else {},
            "eagle2": eagle,
            "eagle3": eagle,
        }
        return {**table.get(method, {}), **self.tuned.get(method, {})}


def device_profile(info: DeviceInfo) -> Profile:
    tuned_settings, source = tuned(info.kind)
    return Profile(dtype_for(info), verify_budget(info), tuned_settings, source)


@functools.cache
def tuned(kind: str) -> tuple[dict, str]:
    """assets/presets/KIND.json's settings and the run they came from; ({}, the sizing's name) when none."""
    from . import preset_file

    path = TUNED / f"{kind}.json"
    if not path.is_file():
        return {}, Profile.source
    data = preset_file.load(path)  # a shipped file that does not load is a bug: fail loudly
    return data["methods"], f"tuned: {data.get('source', path.name)}, {data.get('created', '')}"


def _largest_tree(budget: int) -> str:
    """The preset Medusa tree with the most nodes that fits the verify budget."""
    return max((n for n, t in MEDUSA_TREES.items() if len(t) <= budget), key=lambda n: len(MEDUSA_TREES[n]))
