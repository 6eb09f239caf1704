// paradec's CPU extension, as Python sees it (paradec/kernels.py builds and loads it). pybind11 with torch's tensor
// casters only, not <torch/extension.h> (all of torch's C++ API): this file compiled in 10 s instead of 23.
#include <torch/csrc/utils/pybind.h>

#include "ops.h"

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("pack", &pack, "pack a (N, K) weight into panels (float16 ones if half)", py::arg("w"),
        py::arg("half") = false);
  m.def("half_weights", &half_weights, "whether this CPU's kernel reads float16 panels");
  m.def("linear", &linear, "x (M, K) times a packed weight (+ bias) (+ residual) -> (M, N)", py::arg("x"),
        py::arg("packed"), py::arg("n"), py::arg("bias") = py::none(), py::arg("residual") = py::none());
  m.def("parallel_pieces", &parallel_pieces, "how many threads share a product");
  m.def("rmsnorm", &rmsnorm, "Llama's RMSNorm of x's rows");
  m.def("rope_qkv", &rope_qkv, "rotate q and k, write k and v into a layer's cache, return q (B, M, heads, D)");
  m.def("attention", &attention, "a few queries against a layer's cache -> (B, M, heads, D)");
  m.def("attend_many", &attend_many, "several sequences' rotary, cache writes and attention, each on its own cache");
  m.def("silu_mul", &silu_mul, "silu(gate) * up from the fused gate/up projection");
  m.def("quant_pack", &quant_pack, "a GGUF tensor's Q4_1 or Q8_0 rows (N, bytes) repacked into the kernel's panels");
  m.def("quant_linear", &quant_linear, "x (M, K) times a packed 4/8-bit weight (+ residual) -> (M, N)", py::arg("x"),
        py::arg("packed"), py::arg("type"), py::arg("n"), py::arg("residual") = py::none());
  m.def("quant_rows", &quant_rows, "rows of a packed weight, dequantized (float32)");
  m.def("quant_select", &quant_select, "rows of a packed weight as a packed weight of their own");
  m.def("quant_path", &quant_path, "the instruction set path the 4-bit products were built for");
}
