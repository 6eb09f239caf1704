// The float32 products' arithmetic (small_gemm.cpp binds it to torch): weights packed in panels of P columns,
// k-major, times a block of rows kept in registers. No ATen here: selftest.cpp checks it without torch. A file
// that reads float16 panels declares its load(const at::Half*) before including this one.
#pragma once
#include <algorithm>
#include <cstdint>

#include "vec.h"

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
// turn re-read the whole panel from memory (the prefetches were non-temporal then), and 13 rows cost 1.5x 12; 8 KB
// measured best of 4 to 32 KB. A prompt's hundreds of rows are bound by the arithmetic, not the memory: tiles
// cost them 5%, so they go untiled.
constexpr int64_t KTILE = 8192 / (P * 4), TILED_ROWS = 36;

// A panel row of VW float32 weights.
inline vec load(const float* p) { return *(const vec*)p; }

// An empty asm the compiler must assume changes v in a vector register: "v" names one on x86, "w" on aarch64; other
// platforms go without (the loads are then the compiler's to place).
inline void keep_in_register(vec& v) {
#if defined(__x86_64__) || defined(__i386__)
  asm("" : "+v"(v));
#elif defined(__aarch64__)
  asm("" : "+w"(v));
#else
  (void)v;
#endif
}

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
    // instead of following them (8 rows: 1.6x faster measured here). Into every cache level (prefetcht0):
    // non-temporal prefetches (prefetchnta) read the LM head at 3 GB/s on an Intel Xeon (Sapphire Rapids), a
    // quarter of what these do, and made a one-row pass 2-4x slower than torch's there; on a Zen 3 the two
    // measured alike.
#pragma GCC unroll 2
    for (int c = 0; c < P; c += 16) __builtin_prefetch(pf + (((k - k0) * step) >> 16) * P + c, 0, 3);
    vec w[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) w[j] = load(wp + k * P + j * VW);
    // Keep the weights in registers: left alone, gcc folds their loads into every row's multiply-add, and a
    // block of 4 rows then issues 12 loads for 8 multiply-adds: 6 cycles a panel row instead of 4 (Zen 3).
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) keep_in_register(w[j]);
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
  const int64_t blocks = (M + MAX_ROWS - 1) / MAX_ROWS, tile = blocks == 1 || M > TILED_ROWS ? K : KTILE;
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
