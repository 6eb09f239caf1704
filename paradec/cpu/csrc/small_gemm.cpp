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

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "ops.h"

namespace {

// VW is the machine's vector width (ops.h). A panel is two vectors wide and a block of rows keeps its sums
// (rows x 2 vectors), two weight vectors and a broadcast x in the registers: 12 rows of 32 columns with
// AVX-512's 32 registers, 6 of 16 with the 16 of AVX2 (BLIS's 6x16; 3 rows of 32 columns, the earlier shape,
// were 1.25x slower for 12-16 rows on a Zen 3 and the same for fewer).
constexpr int MAX_ROWS = VW == 16 ? 12 : 6;
constexpr int NV = 2;  // vectors per panel row
constexpr int64_t P = NV * VW;  // output columns per panel
constexpr int64_t PREFETCH = 16384 / (P * 4);  // panel rows ahead: 16 KB
// Panel rows per tile when the blocks of a pass of up to TILED_ROWS rows take turns: without tiles the second
// turn re-read the whole panel from memory (the prefetches are non-temporal), and 13 rows cost 1.5x 12; 8 KB
// measured best of 4 to 32 KB. A prompt's hundreds of rows are bound by the arithmetic, not the memory: tiles
// cost them 5%, so they go untiled.
constexpr int64_t TILE = 8192 / (P * 4), TILED_ROWS = 36;

// A panel row of VW weights as floats: float32 as stored, or float16 widened by the CPU's own conversion
// (F16C, AVX-512), which is exact, so a product over float16 weights has the bits of one over their float32
// copies while reading half the bytes. A drafter's head saved in float16 is packed so (fast.py).
inline vec load(const float* p) { return *(const vec*)p; }
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

// MB rows of x times panel rows k0..k1-1, added to their sums in acc (MB x P; started at 0 when k0 is 0).
// Each sum runs in k order whatever the tiles: the results do not depend on how many rows share a pass.
// Iteration k prefetches panel row pf + (k - k0) * step / 65536: step 65536 is one row an iteration.
template <int MB, typename W>
void block(const float* __restrict x, int64_t K, const W* __restrict wp, float* __restrict acc, int64_t k0,
           int64_t k1, const W* pf, int64_t step) {
  vec a[MB][NV];
  for (int r = 0; r < MB; ++r)
    for (int j = 0; j < NV; ++j) a[r][j] = k0 ? *(const vec*)(acc + r * P + j * VW) : (vec){};
  for (int64_t k = k0; k < k1; ++k) {
    // Ask for the weights ahead (pf: see rows()): the loads from memory then overlap the multiply-adds
    // instead of following them (8 rows: 1.6x faster measured here).
#pragma GCC unroll 2
    for (int c = 0; c < P; c += 16) __builtin_prefetch(pf + (((k - k0) * step) >> 16) * P + c, 0, 0);
    vec w[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) w[j] = load(wp + k * P + j * VW);
    // Keep the weights in registers: left alone, gcc folds their loads into every row's multiply-add, and a
    // block of 4 rows then issues 12 loads for 8 multiply-adds: 6 cycles a panel row instead of 4 (Zen 3).
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) asm("" : "+v"(w[j]));
#pragma GCC unroll 16
    for (int r = 0; r < MB; ++r) {
      const float xv = x[r * K + k];
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) a[r][j] += xv * w[j];
    }
  }
  for (int r = 0; r < MB; ++r)
    for (int j = 0; j < NV; ++j) *(vec*)(acc + r * P + j * VW) = a[r][j];
}

// block<R> for a run-time R in 1..MAX_ROWS (a compile-time count inside, so the loops unroll).
template <typename W, int R = MAX_ROWS>
void dispatch(int64_t rows, const float* x, int64_t K, const W* wp, float* acc, int64_t k0, int64_t k1,
              const W* pf, int64_t step) {
  if constexpr (R > 0) {
    if (rows == R) return block<R>(x, K, wp, acc, k0, k1, pf, step);
    dispatch<W, R - 1>(rows, x, K, wp, acc, k0, k1, pf, step);
  }
}

// M rows times one panel into y's ncols columns, acc an M x P buffer. The rows go in as few blocks as fit
// the registers, of even sizes (16 rows: 5 + 5 + 6, not 6 + 6 + 4; 13: 4 + 4 + 5, not 6 + 6 + 1): a block of
// fewer than 4 rows has too few independent sums to keep both multiply-add units busy, so it takes as long as
// one of 4. Measured on a Zen 3, a block from the L1 cache takes 3.7, 3.8, 3.9, 4.0, 4.9 and 5.9 cycles a
// panel row for 1 to 6 rows; a 16-token forward pass took 7% less time than with 6 + 6 + 4.
// One block streams the panel PREFETCH rows ahead of itself. Taking turns, each block fetches its share of
// the tile two tiles on, so that memory stays busy while the later blocks compute from the cache (when only
// the first block asked, 16 rows cost what the memory and the arithmetic cost one after the other: 1.3x
// slower measured).
// Then y = acc (+ b) (+ res), b and res (the layer's residual stream, M x N) where not null: HF's order.
template <typename W>
void rows(const float* x, int64_t M, int64_t K, const W* wp, float* y, int64_t N, int64_t ncols, float* acc,
          const float* b, const float* res) {
  const int64_t blocks = (M + MAX_ROWS - 1) / MAX_ROWS, tile = blocks == 1 || M > TILED_ROWS ? K : TILE;
  for (int64_t k0 = 0; k0 < K; k0 += tile) {
    for (int64_t b = 0, m = 0; b < blocks; ++b) {
      const int64_t r = (M - m) / (blocks - b);
      const W* pf = blocks == 1 ? wp + (k0 + PREFETCH) * P : wp + (k0 + 2 * tile + b * tile / blocks) * P;
      dispatch(r, x + m * K, K, wp, acc + m * P, k0, std::min(K, k0 + tile), pf, 65536 / blocks);
      m += r;
    }
  }
  for (int64_t r = 0; r < M; ++r)
    for (int64_t j = 0; j < ncols; ++j) {
      float v = acc[r * P + j];
      if (b) v += b[j];
      y[r * N + j] = res ? res[r * N + j] + v : v;
    }
}

}  // namespace

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
