// The 4-bit forward's products as torch sees them (the arithmetic is quant_math.h's): a GGUF tensor's blocks
// repacked into panels once at load, then y = x W^T (+ residual) for float32 rows, and rows of a packed weight
// dequantized (the tied embedding's lookup, an LM head's rows for a drafter).
#include <ATen/Parallel.h>

#include <vector>

#include "ops.h"
#include "quant_math.h"

namespace {

void check_type(int64_t type) {
  TORCH_CHECK(type == quant::Q4_1 || type == quant::Q8_0, "quant: a Q4_1 (3) or Q8_0 (8) weight, not type ", type);
}

void check_packed(const at::Tensor& packed, int64_t type, int64_t N, int64_t K) {
  check_type(type);
  TORCH_CHECK(K > 0 && K % quant::QK == 0 && N > 0, "quant: K a multiple of 32");
  TORCH_CHECK(packed.dim() == 2 && packed.scalar_type() == at::kByte && packed.is_contiguous() &&
              packed.size(0) == quant::panels(N) && packed.size(1) == quant::panel_bytes(type, K),
              "quant: a packed weight of this type and shape");
}

}  // namespace

// raw (N, K / 32 * block bytes) uint8: a GGUF tensor's rows as the file stores them -> (panels, panel bytes).
at::Tensor quant_pack(at::Tensor raw, int64_t type, int64_t K) {
  check_type(type);
  TORCH_CHECK(raw.dim() == 2 && raw.scalar_type() == at::kByte && K % quant::QK == 0 &&
              raw.size(1) == K / quant::QK * quant::file_block_bytes(type), "quant_pack: raw (N, K / 32 blocks)");
  raw = raw.contiguous();
  const int64_t N = raw.size(0), P = quant::panels(N);
  auto packed = at::empty({P, quant::panel_bytes(type, K)}, raw.options());
  const uint8_t* src = raw.data_ptr<uint8_t>();
  uint8_t* dst = packed.data_ptr<uint8_t>();
  at::parallel_for(0, P, 16, [&](int64_t lo, int64_t hi) { quant::pack_panels(src, type, N, K, dst, lo, hi); });
  return packed;
}

// x (M, K) float32 times a packed (N, K) weight -> (M, N), plus residual (M, N) when given.
at::Tensor quant_linear(at::Tensor x, at::Tensor packed, int64_t type, int64_t N,
                        const c10::optional<at::Tensor>& residual) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == at::kFloat && x.device().is_cpu(), "quant_linear: x (M, K) float32");
  x = x.contiguous();
  const int64_t M = x.size(0), K = x.size(1), B = K / quant::QK, P = quant::panels(N);
  check_packed(packed, type, N, K);
  at::Tensor res = residual ? residual->contiguous() : at::Tensor();
  TORCH_CHECK(!residual || (res.numel() == M * N && res.scalar_type() == at::kFloat), "quant_linear: residual (M, N)");
  auto y = at::empty({M, N}, x.options());
  if (M == 0) return y;
  std::vector<int8_t> q(M * K);
  std::vector<float> d(M * B), s(M * B);
  std::vector<int32_t> sums(M * B);
  const float* xs = x.data_ptr<float>();
  at::parallel_for(0, M, 8, [&](int64_t lo, int64_t hi) {  // each row on its own
    for (int64_t m = lo; m < hi; ++m)
      quant::quantize_row(xs + m * K, K, &q[m * K], &d[m * B], &s[m * B], &sums[m * B]);
  });
  const quant::Acts acts{q.data(), d.data(), s.data(), sums.data(), K, B};
  const uint8_t* w = packed.data_ptr<uint8_t>();
  float* ys = y.data_ptr<float>();
  const float* rs = residual ? res.data_ptr<float>() : nullptr;
  // Threads split the panels (output columns), never K: a column's sums are one thread's, in block order.
  at::parallel_for(0, P, 1, [&](int64_t lo, int64_t hi) { quant::gemm(type, acts, M, w, N, lo, hi, ys, rs); });
  return y;
}

// Rows `ids` of a packed (N, K) weight, dequantized as the gguf package does -> (len(ids), K) float32.
at::Tensor quant_rows(at::Tensor packed, int64_t type, int64_t N, int64_t K, at::Tensor ids) {
  check_packed(packed, type, N, K);
  ids = ids.to(at::kLong).contiguous();
  const int64_t* is = ids.data_ptr<int64_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) TORCH_CHECK(0 <= is[i] && is[i] < N, "quant_rows: a row id out of range");
  auto out = at::empty({ids.numel(), K}, at::TensorOptions().dtype(at::kFloat));
  const uint8_t* w = packed.data_ptr<uint8_t>();
  float* o = out.data_ptr<float>();
  at::parallel_for(0, ids.numel(), 64, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) quant::unpack_row(w, type, K, is[i], o + i * K);
  });
  return out;
}

// Rows `ids` of a packed (N, K) weight as a packed weight of their own (an LM head's rows for a vocabulary
// subset): the same blocks, so a product over them gives each row the bits the whole weight gives it.
at::Tensor quant_select(at::Tensor packed, int64_t type, int64_t N, int64_t K, at::Tensor ids) {
  check_packed(packed, type, N, K);
  ids = ids.to(at::kLong).contiguous();
  const int64_t n = ids.numel(), B = K / quant::QK, cb = quant::code_bytes(type), sb = quant::scale_bytes(type);
  const int64_t* is = ids.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) TORCH_CHECK(0 <= is[i] && is[i] < N, "quant_select: a row id out of range");
  auto out = at::zeros({quant::panels(n), quant::panel_bytes(type, K)}, packed.options());
  const uint8_t* src = packed.data_ptr<uint8_t>();
  uint8_t* dst = out.data_ptr<uint8_t>();
  const int64_t pb = quant::panel_bytes(type, K), groups = cb / 64, halves = sb / (2 * quant::COLS);
  at::parallel_for(0, n, 64, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {  // column c of panel p <- column of row is[i]
      const int64_t c = i % quant::COLS, from = is[i] % quant::COLS;
      const uint8_t* s = src + is[i] / quant::COLS * pb;
      uint8_t* t = dst + i / quant::COLS * pb;
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t g = 0; g < groups; ++g)  // a column's 4 bytes in each 64-byte group
          std::memcpy(t + b * cb + 64 * g + 4 * c, s + b * cb + 64 * g + 4 * from, 4);
        const int64_t scales = B * cb + b * sb;  // a block's scales (d, then Q4_1's m), 2 bytes a column
        for (int64_t h = 0; h < halves; ++h)
          std::memcpy(t + scales + h * 2 * quant::COLS + 2 * c, s + scales + h * 2 * quant::COLS + 2 * from, 2);
      }
    }
  });
  return out;
}

std::string quant_path() { return quant::PATH; }
