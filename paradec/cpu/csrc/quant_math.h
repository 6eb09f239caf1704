// The 4-bit forward's products: ggml's blocks (Q4_1, Q8_0) repacked into panels of output columns, times
// activations quantized to 8 bits per block of 32, summed with integer multiply-adds. No ATen here: quant.cpp
// binds it to torch, and selftest.cpp checks its arithmetic without Python on any platform gcc targets.
//
// Why integers: a decode step reads every weight once per pass, so its cost is the bytes. The file's codes are
// 20 bytes per 32 weights (Q4_1) against 128 as float32. The activations are quantized as llama.cpp does,
// x ~ dx * qx with qx in -127..127 per block of 32, so that for Q4_1 (w = d q + m, q in 0..15)
//     sum_k w_k x_k ~ d dx sum(q qx) + m dx sum(qx)
// and for Q8_0 (w = d q) d dx sum(q qx): one integer dot product a block, and two multiply-adds in float.
//
// Batch-invariant: an output (row m, column n) comes from the same floating point operations whatever rows
// share the pass. A row's quantization reads only that row; the integer sums are exact in any order; the
// float sums run lane by lane (a lane is a column) over the blocks in order, in one expression that every
// block of rows and every instruction set path shares. Rows share only the reading of a panel's weights, and
// threads split the panels (the output columns), never K.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

// The portable path passes 64-byte vectors between inline functions: no ABI is crossed.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace quant {

constexpr int QK = 32;    // weights per block: ggml's QK4_1 and QK8_0
constexpr int COLS = 16;  // output columns per panel: one lane each (a 512-bit vector of int32 sums)
enum Type : int { Q4_1 = 3, Q8_0 = 8 };  // ggml's type numbers (GGMLQuantizationType)

typedef float f32x16 __attribute__((vector_size(64)));
typedef int32_t i32x16 __attribute__((vector_size(64)));
typedef float f32x8 __attribute__((vector_size(32)));

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
constexpr const char* PATH = "avx512-vnni";
constexpr int MAX_ROWS = 8;  // a row's two sums in registers (of 32) beside the weights: 8 rows fit
#elif defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
#if defined(__AVXVNNI__) || (defined(__AVX512VNNI__) && defined(__AVX512VL__))
constexpr const char* PATH = "avx-vnni";
#else
constexpr const char* PATH = "avx2";
#endif
constexpr int MAX_ROWS = 4;  // 16 registers: a row's two sums per half panel, 4 rows beside the weights
#else
constexpr const char* PATH = "generic";
constexpr int MAX_ROWS = 4;
#endif

// File bytes of one block, packed bytes of one panel's block (its codes, its scales).
inline int64_t file_block_bytes(int type) { return type == Q4_1 ? 20 : 34; }
inline int64_t code_bytes(int type) { return type == Q4_1 ? COLS * QK / 2 : COLS * QK; }
inline int64_t scale_bytes(int type) { return type == Q4_1 ? COLS * 4 : COLS * 2; }
inline int64_t panel_bytes(int type, int64_t K) { return K / QK * (code_bytes(type) + scale_bytes(type)); }
inline int64_t panels(int64_t N) { return (N + COLS - 1) / COLS; }

// float16 bits -> float, exact (every float16 is a float).
inline float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
  if (exp == 0) {
    const float f = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal
    return sign ? -f : f;
  }
  const uint32_t bits = sign | (exp == 31 ? 0x7f800000u | (mant << 13) : ((exp + 112) << 23) | (mant << 13));
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Panel layout: for each block b of K, the codes of its 16 columns, then (after every block's codes) each
// block's scales. Codes come in 4-byte groups, column by column (byte c * 4 + t: column c, k = 4 g + t), one
// 64-byte vector a group of 4 k, so an int32 lane sums a column's 4 products (VNNI's vpdpbusd, AVX2's
// maddubs then madd). Q4_1: vector j's low nibbles are k = 4 j + t, its high nibbles k = 16 + 4 j + t, as the
// file pairs them in a byte (weight i and i + 16), so repacking moves bytes only. Q8_0: vector g is k = 4 g + t,
// signed. Scales per block: Q4_1 16 float16 d then 16 float16 m; Q8_0 16 float16 d.
// raw: N rows of K / 32 file blocks; packed: panels(N) x panel_bytes, for panels p0 .. p1 - 1, zeros past N.
inline void pack_panels(const uint8_t* raw, int type, int64_t N, int64_t K, uint8_t* packed, int64_t p0, int64_t p1) {
  const int64_t B = K / QK, fb = file_block_bytes(type), cb = code_bytes(type), sb = scale_bytes(type);
  for (int64_t p = p0; p < p1; ++p) {
    uint8_t* codes = packed + p * panel_bytes(type, K);
    uint8_t* scales = codes + B * cb;
    std::memset(codes, 0, panel_bytes(type, K));
    for (int c = 0; c < COLS && p * COLS + c < N; ++c) {
      const uint8_t* row = raw + (p * COLS + c) * B * fb;
      for (int64_t b = 0; b < B; ++b) {
        const uint8_t* blk = row + b * fb;
        uint8_t* out = codes + b * cb;
        if (type == Q4_1) {
          std::memcpy(scales + b * sb + 2 * c, blk, 2);              // d
          std::memcpy(scales + b * sb + 2 * COLS + 2 * c, blk + 2, 2);  // m
          for (int j = 0; j < 4; ++j)
            for (int t = 0; t < 4; ++t) out[64 * j + 4 * c + t] = blk[4 + 4 * j + t];
        } else {
          std::memcpy(scales + b * sb + 2 * c, blk, 2);
          for (int g = 0; g < 8; ++g)
            for (int t = 0; t < 4; ++t) out[64 * g + 4 * c + t] = blk[2 + 4 * g + t];
        }
      }
    }
  }
}

// Row n of a packed weight, dequantized into out (K floats) as the gguf package does: d * q (+ m), each value
// one product (and one sum) in float32, no fused multiply-add (what the float32 engine's weights hold).
inline void unpack_row(const uint8_t* packed, int type, int64_t K, int64_t n, float* out) {
  const int64_t B = K / QK, cb = code_bytes(type), sb = scale_bytes(type), c = n % COLS;
  const uint8_t* codes = packed + n / COLS * panel_bytes(type, K);
  const uint8_t* scales = codes + B * cb;
  for (int64_t b = 0; b < B; ++b) {
    uint16_t hd, hm = 0;
    std::memcpy(&hd, scales + b * sb + 2 * c, 2);
    if (type == Q4_1) std::memcpy(&hm, scales + b * sb + 2 * COLS + 2 * c, 2);
    const float d = half_to_float(hd), m = half_to_float(hm);
    for (int k = 0; k < QK; ++k) {
      const uint8_t* blk = codes + b * cb;
      if (type == Q4_1) {
        const uint8_t byte = blk[64 * (k % 16 / 4) + 4 * c + k % 4];
        const volatile float dq = d * static_cast<float>(k < 16 ? byte & 15 : byte >> 4);  // rounded, then + m
        out[b * QK + k] = dq + m;
      } else {
        out[b * QK + k] = d * static_cast<float>(static_cast<int8_t>(blk[64 * (k / 4) + 4 * c + k % 4]));
      }
    }
  }
}

// M rows quantized per block of 32: q (M x K) int8, d (M x B) the scales, s (M x B) d * sum(q), sum (M x B).
struct Acts {
  const int8_t* q;
  const float* d;
  const float* s;
  const int32_t* sum;
  int64_t K, B;
};

// One row: d = max|x| / 127 per block, q = x / d rounded to the nearest (ties to even). Not inlined: every row
// of every pass runs this one piece of machine code.
__attribute__((noinline)) inline void quantize_row(const float* x, int64_t K, int8_t* q, float* d, float* s,
                                                   int32_t* sum) {
  for (int64_t b = 0; b < K / QK; ++b) {
    const float* xb = x + b * QK;
    float amax = 0;  // a maximum is exact in any order
    for (int i = 0; i < QK; ++i) amax = std::max(amax, std::fabs(xb[i]));
    const float db = amax / 127.0f, id = amax > 0 ? 127.0f / amax : 0.0f;
    int32_t total = 0;
    for (int i = 0; i < QK; ++i) {
      const float v = std::min(127.0f, std::max(-127.0f, std::nearbyint(xb[i] * id)));
      q[b * QK + i] = static_cast<int8_t>(v);
      total += static_cast<int32_t>(v);
    }
    d[b] = db, s[b] = db * static_cast<float>(total), sum[b] = total;
  }
}

// A block's step for one row, in float lane by lane: acc += (d dx) isum (+ m sx for Q4_1). Written once for
// every path and row count, so the compiler fuses the same multiply-adds everywhere.
template <typename V>
inline V step(V acc, V d, float dx, V isum) { return acc + (d * dx) * isum; }
template <typename V>
inline V step(V acc, V d, V m, float dx, float sx, V isum) { return step(acc, d, dx, isum) + m * sx; }

// 4 bytes of activations as one int32, to broadcast (folded into vpdpbusd's memory operand where it can be).
typedef int32_t int32_any __attribute__((may_alias, aligned(1)));
inline int32_t load4(const int8_t* p) { return *reinterpret_cast<const int32_any*>(p); }

// How far ahead in a thread's stream of panels the first block of rows asks for the weights: 8 KB. Left to the
// hardware prefetcher, 8 rows over the 30 layers' gate/up products took 170-190 us a layer's copy from memory on
// one core of an Intel Xeon, 90-100 asking 8 KB ahead (4 KB: 110; 16 KB: as 8), one row 45-60 against 40.
constexpr int64_t AHEAD = 8192;

// Ask for the stream's bytes of block b, AHEAD on (ahead: the panel's start + AHEAD, or null: no asking).
template <int TYPE>
inline void prefetch_block(const uint8_t* ahead, int64_t b) {
  if (!ahead) return;
  constexpr int64_t stride = TYPE == Q4_1 ? COLS * QK / 2 + COLS * 4 : COLS * QK + COLS * 2;
  for (int64_t l = 0; l < stride; l += 64) __builtin_prefetch(ahead + b * stride + l, 0, 3);
}

// R rows of quantized activations arranged block by block for one block of rows: block b's rows side by side
// (q: B x R x 32 bytes; d, s, sum: B x R), so that every address in the inner loops is a constant offset.
struct Tile {
  const int8_t* q;
  const float* d;
  const float* s;
  const int32_t* sum;
  int64_t B;
};

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
inline f32x16 halves(const uint8_t* p) { return (f32x16)_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)p)); }

// A tile of R rows times one panel -> out (R x 16 columns).
template <int R, int TYPE>
void panel_rows(const Tile& a, const uint8_t* codes, const uint8_t* scales, const uint8_t* ahead, f32x16* out) {
  const __m512i low = _mm512_set1_epi8(0x0F), flip = _mm512_set1_epi8(static_cast<char>(0x80));
  f32x16 acc[R];  // in registers: out may alias the codes' bytes as far as the compiler knows
  for (int r = 0; r < R; ++r) acc[r] = f32x16{};
  for (int64_t b = 0; b < a.B; ++b) {
    __m512i is[R];
    for (int r = 0; r < R; ++r) is[r] = _mm512_setzero_si512();
    const uint8_t* c = codes + b * code_bytes(TYPE);
    const int8_t* x = a.q + b * R * QK;
    prefetch_block<TYPE>(ahead, b);
    if (TYPE == Q4_1) {
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const __m512i w = _mm512_loadu_si512(c + 64 * j);
        const __m512i lo = _mm512_and_si512(w, low), hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), low);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          is[r] = _mm512_dpbusd_epi32(is[r], lo, _mm512_set1_epi32(load4(x + r * QK + 4 * j)));
          is[r] = _mm512_dpbusd_epi32(is[r], hi, _mm512_set1_epi32(load4(x + r * QK + 16 + 4 * j)));
        }
      }
    } else {  // signed codes made unsigned (+128); the row's 128 * sum(qx) taken back below, exactly
#pragma GCC unroll 8
      for (int g = 0; g < 8; ++g) {
        const __m512i w = _mm512_xor_si512(_mm512_loadu_si512(c + 64 * g), flip);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
          is[r] = _mm512_dpbusd_epi32(is[r], w, _mm512_set1_epi32(load4(x + r * QK + 4 * g)));
      }
    }
    const uint8_t* sc = scales + b * scale_bytes(TYPE);
    const f32x16 d = halves(sc);
    const int64_t at = b * R;
    if (TYPE == Q4_1) {
      const f32x16 m = halves(sc + 2 * COLS);
      for (int r = 0; r < R; ++r)
        acc[r] = step(acc[r], d, m, a.d[at + r], a.s[at + r], (f32x16)_mm512_cvtepi32_ps(is[r]));
    } else {
      for (int r = 0; r < R; ++r) {
        const __m512i exact = _mm512_sub_epi32(is[r], _mm512_set1_epi32(128 * a.sum[at + r]));
        acc[r] = step(acc[r], d, a.d[at + r], (f32x16)_mm512_cvtepi32_ps(exact));
      }
    }
  }
  for (int r = 0; r < R; ++r) out[r] = acc[r];
}

#elif defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
inline f32x8 halves(const uint8_t* p) { return (f32x8)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p)); }

// 4 products of unsigned w and signed x bytes added into each int32 lane.
inline __m256i dot4(__m256i acc, __m256i w, __m256i x) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(acc, w, x);
#elif defined(__AVXVNNI__)
  return _mm256_dpbusd_avx_epi32(acc, w, x);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1)));
#endif
}

// Half h of a panel (columns 8 h .. 8 h + 7: bytes 32 h .. 32 h + 31 of each 64-byte group).
template <int R, int TYPE>
void half_rows(const Tile& a, const uint8_t* codes, const uint8_t* scales, const uint8_t* ahead, int h,
               f32x8* out) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  f32x8 acc[R];  // in registers: out may alias the codes' bytes as far as the compiler knows
  for (int r = 0; r < R; ++r) acc[r] = f32x8{};
  for (int64_t b = 0; b < a.B; ++b) {
    __m256i is[R];
    for (int r = 0; r < R; ++r) is[r] = _mm256_setzero_si256();
    const uint8_t* c = codes + b * code_bytes(TYPE) + 32 * h;
    const int8_t* x = a.q + b * R * QK;
    prefetch_block<TYPE>(ahead, b);
    if (TYPE == Q4_1) {
#if defined(__AVXVNNI__) || (defined(__AVX512VNNI__) && defined(__AVX512VL__))
      for (int j = 0; j < 4; ++j) {
        const __m256i w = _mm256_loadu_si256((const __m256i*)(c + 64 * j));
        const __m256i lo = _mm256_and_si256(w, low), hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), low);
        for (int r = 0; r < R; ++r) {
          is[r] = dot4(is[r], lo, _mm256_set1_epi32(load4(x + r * QK + 4 * j)));
          is[r] = dot4(is[r], hi, _mm256_set1_epi32(load4(x + r * QK + 16 + 4 * j)));
        }
      }
#else
      // maddubs' int16 pairs summed over the whole block before one madd: at most 8 x 2 x 15 x 127 = 30480,
      // within int16, so no saturation and no rounding: the same exact sums as VNNI's.
      __m256i s16[R];
      for (int r = 0; r < R; ++r) s16[r] = _mm256_setzero_si256();
      for (int j = 0; j < 4; ++j) {
        const __m256i w = _mm256_loadu_si256((const __m256i*)(c + 64 * j));
        const __m256i lo = _mm256_and_si256(w, low), hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), low);
        for (int r = 0; r < R; ++r) {
          s16[r] = _mm256_add_epi16(s16[r], _mm256_maddubs_epi16(lo, _mm256_set1_epi32(load4(x + r * QK + 4 * j))));
          s16[r] = _mm256_add_epi16(s16[r],
                                    _mm256_maddubs_epi16(hi, _mm256_set1_epi32(load4(x + r * QK + 16 + 4 * j))));
        }
      }
      for (int r = 0; r < R; ++r) is[r] = _mm256_madd_epi16(s16[r], _mm256_set1_epi16(1));
#endif
    } else {  // signed codes: |w| times x with w's sign (a pair's sum fits int16: 2 x 128 x 127)
      for (int g = 0; g < 8; ++g) {
        const __m256i w = _mm256_loadu_si256((const __m256i*)(c + 64 * g)), aw = _mm256_sign_epi8(w, w);
        for (int r = 0; r < R; ++r) {
          const __m256i xs = _mm256_sign_epi8(_mm256_set1_epi32(load4(x + r * QK + 4 * g)), w);
          is[r] = _mm256_add_epi32(is[r], _mm256_madd_epi16(_mm256_maddubs_epi16(aw, xs), _mm256_set1_epi16(1)));
        }
      }
    }
    const uint8_t* sc = scales + b * scale_bytes(TYPE) + 16 * h;
    const f32x8 d = halves(sc);
    const int64_t at = b * R;
    if (TYPE == Q4_1) {
      const f32x8 m = halves(sc + 2 * COLS);
      for (int r = 0; r < R; ++r)
        acc[r] = step(acc[r], d, m, a.d[at + r], a.s[at + r], (f32x8)_mm256_cvtepi32_ps(is[r]));
    } else {
      for (int r = 0; r < R; ++r) acc[r] = step(acc[r], d, a.d[at + r], (f32x8)_mm256_cvtepi32_ps(is[r]));
    }
  }
  for (int r = 0; r < R; ++r) out[r] = acc[r];
}

template <int R, int TYPE>
void panel_rows(const Tile& a, const uint8_t* codes, const uint8_t* scales, const uint8_t* ahead, f32x16* acc) {
  f32x8 half[R];
  for (int h = 0; h < 2; ++h) {
    half_rows<R, TYPE>(a, codes, scales, h ? nullptr : ahead, h, half);
    for (int r = 0; r < R; ++r)
      for (int i = 0; i < 8; ++i) acc[r][8 * h + i] = half[r][i];
  }
}

#else
// Portable: gcc's vector extensions (NEON registers on aarch64), the same sums lane by lane.
inline f32x16 halves(const uint8_t* p) {
  f32x16 v;
  for (int i = 0; i < COLS; ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    v[i] = half_to_float(h);
  }
  return v;
}

// Byte t of every int32 lane, as an integer: unsigned (Q4_1's codes) or signed (Q8_0's).
inline i32x16 byte_of(const i32x16& w, int t, bool sign) {
  return sign ? (w << (24 - 8 * t)) >> 24 : (w >> (8 * t)) & 0xFF;
}

inline void dot4(i32x16& acc, const i32x16& w, const int8_t* x, bool sign) {
  for (int t = 0; t < 4; ++t) acc += byte_of(w, t, sign) * static_cast<int32_t>(x[t]);
}

template <int R, int TYPE>
void panel_rows(const Tile& a, const uint8_t* codes, const uint8_t* scales, const uint8_t* ahead, f32x16* out) {
  f32x16 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = f32x16{};
  for (int64_t b = 0; b < a.B; ++b) {
    i32x16 is[R] = {};
    const uint8_t* c = codes + b * code_bytes(TYPE);
    const int8_t* x = a.q + b * R * QK;
    prefetch_block<TYPE>(ahead, b);
    for (int g = 0; g < (TYPE == Q4_1 ? 4 : 8); ++g) {
      i32x16 w;
      std::memcpy(&w, c + 64 * g, 64);
      for (int r = 0; r < R; ++r) {
        if (TYPE == Q4_1) {
          dot4(is[r], w & 0x0F0F0F0F, x + r * QK + 4 * g, false);
          dot4(is[r], (w >> 4) & 0x0F0F0F0F, x + r * QK + 16 + 4 * g, false);
        } else {
          dot4(is[r], w, x + r * QK + 4 * g, true);
        }
      }
    }
    const uint8_t* sc = scales + b * scale_bytes(TYPE);
    const f32x16 d = halves(sc);
    const int64_t at = b * R;
    for (int r = 0; r < R; ++r) {
      const f32x16 fs = __builtin_convertvector(is[r], f32x16);
      acc[r] = TYPE == Q4_1 ? step(acc[r], d, halves(sc + 2 * COLS), a.d[at + r], a.s[at + r], fs)
                            : step(acc[r], d, a.d[at + r], fs);
    }
  }
  for (int r = 0; r < R; ++r) out[r] = acc[r];
}
#endif

// panel_rows<R> for a run-time R in 1 .. MAX_ROWS.
template <int TYPE, int R = MAX_ROWS>
void rows_dispatch(int64_t rows, const Tile& t, const uint8_t* codes, const uint8_t* scales, const uint8_t* ahead,
                   f32x16* acc) {
  if constexpr (R > 0) {
    if (rows == R) return panel_rows<R, TYPE>(t, codes, scales, ahead, acc);
    rows_dispatch<TYPE, R - 1>(rows, t, codes, scales, ahead, acc);
  }
}

// The rows of a pass in blocks of up to MAX_ROWS, of even sizes, each block's activations arranged as a Tile.
struct Tiles {
  std::vector<int8_t> q;
  std::vector<float> d, s;
  std::vector<int32_t> sum;
  std::vector<int64_t> first;  // block i: rows first[i] .. first[i + 1] - 1
  Tiles(const Acts& a, int64_t M) : q(M * a.K), d(M * a.B), s(M * a.B), sum(M * a.B) {
    const int64_t blocks = (M + MAX_ROWS - 1) / MAX_ROWS;
    first.push_back(0);
    for (int64_t i = 0; i < blocks; ++i) first.push_back(first.back() + (M - first.back()) / (blocks - i));
    for (int64_t i = 0; i < blocks; ++i) {
      const int64_t m = first[i], r = first[i + 1] - m;
      for (int64_t b = 0; b < a.B; ++b)
        for (int64_t j = 0; j < r; ++j) {
          std::memcpy(&q[m * a.K + (b * r + j) * QK], a.q + (m + j) * a.K + b * QK, QK);
          const int64_t to = m * a.B + b * r + j, from = (m + j) * a.B + b;
          d[to] = a.d[from], s[to] = a.s[from], sum[to] = a.sum[from];
        }
    }
  }
  Tile tile(int64_t i, int64_t K, int64_t B) const {
    const int64_t m = first[i];
    return Tile{&q[m * K], &d[m * B], &s[m * B], &sum[m * B], B};
  }
};

// y (M x N, row stride N) = x W^T (+ res) for panels p0 .. p1 - 1: each block of rows over the whole panel while
// it sits in the L1 cache (a panel is 6-15 KB here).
template <int TYPE>
void gemm_panels(const Acts& a, int64_t M, const uint8_t* packed, int64_t N, int64_t p0, int64_t p1, float* y,
                 const float* res) {
  const Tiles tiles(a, M);
  f32x16 acc[MAX_ROWS];
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t* codes = packed + p * panel_bytes(TYPE, a.K);
    const uint8_t* scales = codes + a.B * code_bytes(TYPE);
    const int64_t cols = std::min<int64_t>(COLS, N - p * COLS);
    for (size_t blk = 0; blk + 1 < tiles.first.size(); ++blk) {
      const int64_t m = tiles.first[blk], r = tiles.first[blk + 1] - m;
      // the first block streams the panel from memory, asking ahead; the others read it from the L1 cache
      rows_dispatch<TYPE>(r, tiles.tile(blk, a.K, a.B), codes, scales, blk ? nullptr : codes + AHEAD, acc);
      for (int64_t i = 0; i < r; ++i)
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t at = (m + i) * N + p * COLS + c;
          y[at] = res ? res[at] + acc[i][c] : acc[i][c];
        }
    }
  }
}

inline void gemm(int type, const Acts& a, int64_t M, const uint8_t* packed, int64_t N, int64_t p0, int64_t p1,
                 float* y, const float* res) {
  if (type == Q4_1)
    gemm_panels<Q4_1>(a, M, packed, N, p0, p1, y, res);
  else
    gemm_panels<Q8_0>(a, M, packed, N, p0, p1, y, res);
}

}  // namespace quant
