"""The roofline model of one forward pass: what it computes, what it moves, and which of the
two the chip waits on.

A forward over n query tokens reads every weight once (whatever n is) and does about two
FLOPs per weight per token, so its arithmetic intensity (FLOPs per byte moved) grows with n.
Below the chip's ridge point (peak FLOP/s / bandwidth) the pass is memory-bound and extra
tokens ride along almost free: that is the room parallel decoding uses.

Pure Python: hardware presets, model shapes and the cost formulas. The probe that measures
this machine is in paradec.costs.machine, the speculative step's cost model in paradec.costs.speccost."""
from __future__ import annotations

from dataclasses import dataclass, replace

# Bytes per element. tf32 is a tensor-core mode: the data stays 4-byte float32 in memory.
DTYPE_BYTES = {"float32": 4, "tf32": 4, "bfloat16": 2, "float16": 2, "int8": 1}

T = 1e12

# Bytes per weight of a GGUF file's blocks as paradec's 4-bit engine reads them (docs/kernel.md): Q4_1 for the layers'
# matrices (32 weights in 20 bytes: 16 of 4-bit codes, a float16 scale and a float16 minimum), Q8_0 for the LM head
# (32 in 34: 8-bit codes and a float16 scale). Its activations and KV cache stay float32. "f32": every weight float32.
WEIGHT_FORMATS = {"q4": {"layers": 20 / 32, "head": 34 / 32, "dtype": "float32"}}


@dataclass(frozen=True)
class Hardware:
    name: str
    flops: dict  # dtype -> peak dense FLOP/s (tensor cores where the chip has them; no 2:4 sparsity)
    bandwidth: float  # bytes/s of main memory (HBM, GDDR, unified memory or DRAM)
    source: str

    def peak(self, dtype: str) -> float:
        if dtype not in self.flops:
            raise KeyError(f"{self.name} has no {dtype} figure (it has {', '.join(self.flops)})")
        return self.flops[dtype]

    def ridge(self, dtype: str) -> float:
        """FLOPs per byte where the memory roof meets the compute roof."""
        return self.peak(dtype) / self.bandwidth


# Vendor datasheets quote tensor-core peaks "with sparsity"; the dense figure is half of that.
HARDWARE = {h.name: h for h in [
    # NVIDIA H100 Tensor Core GPU datasheet, SXM5 column: FP32 67, TF32 989*, BF16/FP16 1,979*,
    # INT8 3,958* (* with sparsity), HBM3 3.35 TB/s.
    Hardware("H100 SXM", {"float32": 67 * T, "tf32": 494.5 * T, "bfloat16": 989.5 * T, "float16": 989.5 * T,
                          "int8": 1979 * T}, 3.35e12, "NVIDIA H100 Tensor Core GPU datasheet (SXM5)"),
    # NVIDIA H200 Tensor Core GPU datasheet, SXM column: the H100's compute, HBM3e 4.8 TB/s.
    Hardware("H200", {"float32": 67 * T, "tf32": 494.5 * T, "bfloat16": 989.5 * T, "float16": 989.5 * T,
                      "int8": 1979 * T}, 4.8e12, "NVIDIA H200 Tensor Core GPU datasheet (SXM)"),
    # NVIDIA A100 Tensor Core GPU datasheet, 80GB SXM: FP32 19.5, TF32 156, BF16/FP16 312,
    # INT8 624 (dense), HBM2e 2,039 GB/s.
    Hardware("A100 80GB", {"float32": 19.5 * T, "tf32": 156 * T, "bfloat16": 312 * T, "float16": 312 * T,
                           "int8": 624 * T}, 2.039e12, "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM)"),
    # NVIDIA L4 Tensor Core GPU datasheet: FP32 30.3, TF32 120*, BF16/FP16 242*, INT8 485*, 300 GB/s.
    Hardware("L4", {"float32": 30.3 * T, "tf32": 60 * T, "bfloat16": 121 * T, "float16": 121 * T,
                    "int8": 242.5 * T}, 300e9, "NVIDIA L4 Tensor Core GPU datasheet"),
    # NVIDIA T4 Tensor Core GPU datasheet: FP32 8.1, mixed-precision FP16/FP32 65, INT8 130 TOPS,
    # GDDR6 320 GB/s. Turing has no bfloat16 or tf32.
    Hardware("T4", {"float32": 8.1 * T, "float16": 65 * T, "int8": 130 * T}, 320e9, "NVIDIA T4 datasheet"),
    # NVIDIA Ada Lovelace GPU Architecture whitepaper, GeForce RTX 4090 column: FP32 82.6,
    # TF32 tensor 82.6, FP16/BF16 tensor with FP32 accumulate 165.2, INT8 tensor 660.6 (dense),
    # GDDR6X 1,008 GB/s.
    Hardware("RTX 4090", {"float32": 82.6 * T, "tf32": 82.6 * T, "bfloat16": 165.2 * T, "float16": 165.2 * T,
                          "int8": 660.6 * T}, 1.008e12, "NVIDIA Ada Lovelace GPU architecture whitepaper"),
    # Apple newsroom, "Introducing M1 Pro and M1 Max" (October 2021): 32-core GPU, 10.4 TFLOPS
    # (FP32), 400 GB/s unified memory. Apple quotes no FP16 figure; this GPU has no faster
    # half-precision pipe, so FP16 is taken at the FP32 rate.
    Hardware("Apple M1 Max", {"float32": 10.4 * T, "float16": 10.4 * T}, 400e9,
             "Apple newsroom, Introducing M1 Pro and M1 Max (2021)"),
]}


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer (Llama family: SwiGLU MLP, grouped-query attention)."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    tied: bool  # the LM head shares the input embedding's matrix
    dtype_bytes: int = 2
    head_dim: int = 0  # 0: hidden // heads
    layer_bytes: float = 0.0  # bytes per weight of the layers' matrices, and of the LM head, where they are stored
    head_bytes: float = 0.0  # in blocks of their own (WEIGHT_FORMATS); 0: the dtype's

    def __post_init__(self):
        object.__setattr__(self, "head_dim", self.head_dim or self.hidden // self.heads)

    def with_dtype(self, dtype: str) -> "ModelShape":
        return replace(self, dtype_bytes=DTYPE_BYTES[dtype])

    def with_weights(self, weights: str) -> "ModelShape":
        """The model with its weights in a format of WEIGHT_FORMATS (q4), or as its dtype has them (f32)."""
        if weights not in WEIGHT_FORMATS:
            return self
        f = WEIGHT_FORMATS[weights]
        return replace(self.with_dtype(f["dtype"]), layer_bytes=f["layers"], head_bytes=f["head"])


# From each model's config.json on the Hugging Face hub.
MODELS = {m.name: m for m in [
    ModelShape("SmolLM2-135M-Instruct", 30, 576, 9, 3, 1536, 49152, True),
    ModelShape("Llama-2-7B / Vicuna-7B", 32, 4096, 32, 32, 11008, 32000, False),
    ModelShape("Llama-3.1-8B", 32, 4096, 32, 8, 14336, 128256, False),
]}


def layer_params(m: ModelShape) -> int:
    q = m.heads * m.head_dim
    kv = m.kv_heads * m.head_dim
    # q and o projections, k and v projections (GQA: kv_heads only), SwiGLU gate, up and down.
    return 2 * m.hidden * q + 2 * m.hidden * kv + 3 * m.hidden * m.intermediate


def params(m: ModelShape) -> int:
    return m.layers * layer_params(m) + m.vocab * m.hidden * (1 if m.tied else 2)


def weight_bytes(m: ModelShape) -> int:
    """Weights one forward reads: every layer and the whole LM head. The input embedding only
    gathers n rows (left out, as are the norms' few vectors); tied or not, the head is V x h."""
    return round(m.layers * layer_params(m) * (m.layer_bytes or m.dtype_bytes)
                 + m.vocab * m.hidden * (m.head_bytes or m.dtype_bytes))


def kv_bytes_per_token(m: ModelShape) -> int:
    return 2 * m.layers * m.kv_heads * m.head_dim * m.dtype_bytes  # K and V, every layer


def kv_bytes(m: ModelShape, n: int, c: int, b: int = 1) -> int:
    """KV cache traffic: attention reads the keys and values of all c + n positions and the
    pass writes those of its n new tokens, for each of b sequences."""
    return b * kv_bytes_per_token(m) * ((c + n) + n)


@dataclass(frozen=True)
class Cost:
    flops: float
    bytes: float

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes


def forward_cost(m: ModelShape, n: int, c: int = 0, b: int = 1, logit_rows: int | None = None) -> Cost:
    """One forward over n query tokens after c cached ones, batch b.
    logit_rows: rows that go through the LM head (default all n: a verify pass needs every
    one; paradec's first pass keeps only the last prompt row onwards). Activations are left
    out of the bytes: per layer they are n x hidden, tiny next to the weights."""
    rows = n if logit_rows is None else logit_rows
    linear = 2 * layer_params(m) * n  # one multiply-add per weight per query row
    # Q K^T and (softmax) V over all c + n keys: SDPA computes the masked entries too.
    attention = 4 * n * (c + n) * m.heads * m.head_dim
    flops = b * (m.layers * (linear + attention) + 2 * m.hidden * m.vocab * rows)
    return Cost(flops, weight_bytes(m) + kv_bytes(m, n, c, b))


def seconds(hw: Hardware, dtype: str, cost: Cost) -> float:
    """The roofline's time: whichever of compute and memory traffic takes longer."""
    return max(cost.flops / hw.peak(dtype), cost.bytes / hw.bandwidth)


def memory_bound(hw: Hardware, dtype: str, cost: Cost) -> bool:
    return cost.intensity < hw.ridge(dtype)


def attainable(hw: Hardware, dtype: str, intensity: float) -> float:
    """FLOP/s the roofline allows at this intensity."""
    return min(hw.peak(dtype), intensity * hw.bandwidth)


def crossing(hw: Hardware, m: ModelShape, dtype: str, context: int = 0, batch: int = 1,
             most: int = 4096) -> int | None:
    """The fewest tokens in a pass (after `context` cached ones, at this batch) whose arithmetic intensity reaches
    the chip's ridge: from there on the pass waits on arithmetic, not on memory. None: not within `most`."""
    ridge, shape = hw.ridge(dtype), m.with_dtype(dtype)

    def reaches(n: int) -> bool:
        return forward_cost(shape, n, context, batch).intensity >= ridge

    if not reaches(most):
        return None
    low, high = 1, most  # intensity grows with the tokens in the pass: a bisection finds the first
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if reaches(mid) else (mid + 1, high)
    return low


def forward_time(hw: Hardware, m: ModelShape, dtype: str, n: int, c: int = 0, b: int = 1,
                 logit_rows: int | None = None) -> float:
    return seconds(hw, dtype, forward_cost(m.with_dtype(dtype), n, c, b, logit_rows))


def verify_pass(step) -> tuple[int, int, int]:
    """(n, c, logit rows) of a recorded step's verify forward. The first pass is the prefill:
    the whole prompt is uncached; later passes feed the pending token (its KV was not computed
    yet) plus every drafted node and window token. Logits are kept from the pending token on."""
    uncached = step.context_len if step.index == 0 else 1
    return step.verified, step.context_len - uncached, step.verified - uncached + 1
