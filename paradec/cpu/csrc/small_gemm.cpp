// y = x W^T (+ b) (+ residual) for the few rows a decode step feeds (1 to a few dozen), float32, on the CPU.
//
// Why: a 1-token forward pass is a matrix-vector product whose cost is reading the weights once. A verify
// pass over M tokens reads the same weights, so it should cost about the same up to a dozen rows; the
// library GEMM on some CPUs instead costs 1.7-2.3x for 2-16 rows. Here the weights are packed once at load
// into panels of P output columns stored k-major (panel p, row k: W[Pp .. Pp+P-1, k]; P is 32 with AVX-512,
// 16 with AVX2), so a panel streams from memory once while up to 12 rows (6 with AVX2) accumulate in
// registers. A verify pass's further rows take turns on each 8 KB tile of the panel while it is in the L1
// cache, their sums parked in a small buffer between tiles.
//
// Portable C++: gcc/clang vector extensions of the machine's vector width, built with -O3 -march=native -fopenmp
// by paradec/kernels.py (without OpenMP, at::parallel_for runs on one thread). The products sum in k order, with
// fused multiply-adds: not bit-equal to a library GEMM, so every forward pass that must agree (AR and every
// verify pass) goes through this one kernel.
#include <ATen/Parallel.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <vector>

#include "ops.h"

namespace {

// A panel row of VW float16 weights as floats, widened by the CPU's own conversion (F16C, AVX-512), which is
// exact, so a product over float16 weights has the bits of one over their float32 copies while reading half the
// bytes. A drafter's head saved in float16 is packed so (fast.py).
#if defined(__AVX512F__)
constexpr bool HALF = true;
inline vec load(const at::Half* p) { return (vec)_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)p)); }
#elif defined(__F16C__) && defined(__AVX__)
constexpr bool HALF = true;
inline vec load(const at::Half* p) { return (vec)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p)); }
#else
constexpr bool HALF = false;  // float32 panels only
inline vec load(const at::Half* p) { vec v; for (int i = 0; i < VW; ++i) v[i] = static_cast<float>(p[i]); return v; }
#endif

}  // namespace

#include "gemm_math.h"  // after the float16 loads: its templates find them

// W (N, K) -> panels (ceil(N/P), K, P), zero-padded past N, in float16 when half (W's values exactly float16's:
// the caller checks) and this CPU converts float16 in its registers, else float32.
at::Tensor pack(at::Tensor w, bool half) {
  TORCH_CHECK(w.dim() == 2, "pack: a 2-D weight");
  TORCH_CHECK(!half || HALF, "pack: this CPU has no float16 conversion");
  w = w.detach().to(at::kCPU, at::kFloat).contiguous();
  const int64_t N = w.size(0), K = w.size(1), panels = (N + P - 1) / P;
  auto packed = at::zeros({panels, K, P}, w.options());
  const float* src = w.data_ptr<float>();
  float* dst = packed.data_ptr<float>();
  at::parallel_for(0, panels, 16, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p)
      for (int64_t j = 0; j < P && p * P + j < N; ++j)
        for (int64_t k = 0; k < K; ++k) dst[(p * K + k) * P + j] = src[(p * P + j) * K + k];
  });
  return half ? packed.to(at::kHalf) : packed;
}

bool half_weights() { return HALF; }

// x (M, K) float32, packed from pack(W), N = W's rows -> (M, N), plus bias (N) and residual (M, N) if given.
at::Tensor linear(at::Tensor x, at::Tensor packed, int64_t N, const c10::optional<at::Tensor>& bias,
                     const c10::optional<at::Tensor>& residual) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == at::kFloat && x.device().is_cpu(), "linear: x (M, K) float32");
  TORCH_CHECK(packed.dim() == 3 && packed.size(2) == P && packed.size(1) == x.size(1) &&
              (packed.scalar_type() == at::kFloat || packed.scalar_type() == at::kHalf), "linear: packed weight");
  TORCH_CHECK(N > (packed.size(0) - 1) * P && N <= packed.size(0) * P, "linear: N");
  x = x.contiguous();
  const int64_t M = x.size(0), K = x.size(1), panels = packed.size(0);
  at::Tensor b = bias ? bias->contiguous() : at::Tensor(), res = residual ? residual->contiguous() : b;
  TORCH_CHECK(!bias || (b.numel() == N && b.scalar_type() == at::kFloat), "linear: bias (N) float32");
  TORCH_CHECK(!residual || (res.numel() == M * N && res.scalar_type() == at::kFloat), "linear: residual (M, N)");
  auto y = at::empty({M, N}, x.options());
  const float* xs = x.data_ptr<float>();
  const float* bs = bias ? b.data_ptr<float>() : nullptr;
  const float* rs = residual ? res.data_ptr<float>() : nullptr;
  float* ys = y.data_ptr<float>();
  auto each = [&](auto* ws) {  // ws: the panels, float or at::Half
    at::parallel_for(0, panels, 4, [&](int64_t lo, int64_t hi) {
      std::vector<float> acc(M * P);
      for (int64_t p = lo; p < hi; ++p)
        rows(xs, M, K, ws + p * K * P, ys + p * P, N, std::min<int64_t>(P, N - p * P), acc.data(),
             bs ? bs + p * P : nullptr, rs ? rs + p * P : nullptr);
    });
  };
  if (packed.scalar_type() == at::kHalf)
    each(static_cast<const at::Half*>(packed.data_ptr<at::Half>()));
  else
    each(static_cast<const float*>(packed.data_ptr<float>()));
  return y;
}

// How many pieces parallel_for cuts work into here: torch's thread count when built with OpenMP, else 1.
int64_t parallel_pieces() {
  std::atomic<int64_t> pieces{0};
  at::parallel_for(0, 1024, 1, [&](int64_t, int64_t) { ++pieces; });
  return pieces;
}
