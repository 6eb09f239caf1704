// The arithmetic that layer.cpp's steps and batch.cpp's share: vector sums in a fixed order, e^x, the rotary
// rotation, and attention over a cache for a run of rows (see layer.cpp for why each is written so).
#pragma once
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "vec.h"

namespace {

typedef int32_t ivec __attribute__((vector_size(VW * 4), aligned(4)));

inline vec splat(float x) { return vec{} + x; }

inline float hsum(vec v) {  // lane by lane: a fixed order
  float s = 0;
  for (int i = 0; i < VW; ++i) s += v[i];
  return s;
}

inline float dot(const float* a, const float* b, int64_t n) {
  vec acc{};
  int64_t i = 0;
  for (; i + VW <= n; i += VW) acc += *(const vec*)(a + i) * *(const vec*)(b + i);
  float s = hsum(acc);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// e^x by Cephes' expf (range reduction by ln 2, a degree-6 polynomial: ~1e-7 relative error), lane by lane;
// 0 below -87.3, where e^x leaves float's normal range (a masked score, -inf, lands there too).
inline vec exp_vec(vec x) {
  const ivec tiny = x < splat(-87.3f);
  x = tiny ? splat(0.f) : x;
  x = x > splat(88.3f) ? splat(88.3f) : x;
  const vec t = x * 1.44269504f;
  const ivec n = __builtin_convertvector(t + (t < splat(0.f) ? splat(-0.5f) : splat(0.5f)), ivec);
  const vec nf = __builtin_convertvector(n, vec);
  const vec r = x - nf * 0.693359375f - nf * -2.12194440e-4f;
  vec p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  return tiny ? splat(0.f) : p * (vec)((n + 127) << 23);  // times 2^n, built in the exponent's bits
}

// Llama's rotation of one head's vector: out = x cos + rotate_half(x) sin, rotate_half(x) = (-x2, x1).
inline void rotate(const float* x, const float* c, const float* s, float* out, int64_t d) {
  const int64_t half = d / 2;
  for (int64_t i = 0; i < half; ++i) out[i] = x[i] * c[i] - x[i + half] * s[i];
  for (int64_t i = half; i < d; ++i) out[i] = x[i] * c[i] + x[i - half] * s[i];
}

// KEYS keys' dot products with q at once, each its own sum in d order, lane by lane, then its lanes (lanes8).
// The chains of multiply-adds are independent, so the CPU overlaps them (one key's chain alone waits on each
// multiply-add's latency). Every key gets the same bits whichever keys it goes with.
constexpr int64_t KEYS = 8;
#if defined(__AVX512F__)
// The eight keys' lanes summed at once: each key's 16 lanes in halves added lane to lane (i + i+8, then i + i+4,
// i + i+2, i + i+1), the same order for every key wherever it sits among the eight. 16 shuffles and 8 adds for
// the eight keys, where hsum's lane-by-lane order takes 15 dependent adds and 16 extractions a key: the scores
// were most of a decode step's attention at batch 8.
inline void lanes8(const vec* a, float* s) {
  __m512 h[4], g[2];
  for (int p = 0; p < 4; ++p) {  // keys 2p and 2p+1: their 8 half sums each, side by side
    const __m512 x = (__m512)a[2 * p], y = (__m512)a[2 * p + 1];
    h[p] = _mm512_add_ps(_mm512_shuffle_f32x4(x, y, 0x44), _mm512_shuffle_f32x4(x, y, 0xEE));
  }
  for (int p = 0; p < 2; ++p)  // keys 4p .. 4p+3: 4 each, one 128-bit lane a key
    g[p] = _mm512_add_ps(_mm512_shuffle_f32x4(h[2 * p], h[2 * p + 1], 0x88),
                         _mm512_shuffle_f32x4(h[2 * p], h[2 * p + 1], 0xDD));
  // lane j: keys j and j+4, 2 each, then 1 each
  const __m512 e = _mm512_add_ps(_mm512_shuffle_ps(g[0], g[1], 0x44), _mm512_shuffle_ps(g[0], g[1], 0xEE));
  const __m512 f = _mm512_add_ps(_mm512_shuffle_ps(e, e, 0x88), _mm512_shuffle_ps(e, e, 0xDD));
  alignas(64) float t[16];
  _mm512_store_ps(t, f);
  for (int j = 0; j < 4; ++j) s[j] = t[4 * j], s[j + 4] = t[4 * j + 1];
}
#else
inline void lanes8(const vec* a, float* s) {
  for (int64_t j = 0; j < KEYS; ++j) s[j] = hsum(a[j]);
}
#endif

inline void dots(const float* q, const float* const* k, int64_t d, float* out) {
  vec a[KEYS] = {};
  int64_t i = 0;
  for (; i + VW <= d; i += VW) {
    const vec qv = *(const vec*)(q + i);
#pragma GCC unroll 8
    for (int64_t j = 0; j < KEYS; ++j) a[j] += qv * *(const vec*)(k[j] + i);
  }
  float s[KEYS];
  lanes8(a, s);
#pragma GCC unroll 8
  for (int64_t j = 0; j < KEYS; ++j) {
    for (int64_t c = i; c < d; ++c) s[j] += q[c] * k[j][c];
    out[j] = s[j];
  }
}

// out (d) += p[c] v[slot c] for the visible entries c0 .. c1 - 1 in order (slots: where each visible entry sits in
// the cache, null: entry c is slot c): NB vectors of out at a time in registers across the entries (a count known
// when compiling: with a count known only at run time the sums lived on the stack, and each entry waited on the
// last one's store), the rest of d one by one.
void weigh(const float* p, const float* v, const int32_t* slots, int64_t c0, int64_t c1, int64_t d, float* out) {
  // Vectors a block: eight independent sums keep the multiply-add units busy, and with AVX2 eight are a head of
  // 64; with AVX-512 four are (blocks of eight, 128 floats, would leave such a head all to the scalar rest).
  constexpr int64_t NB = VW == 16 ? 4 : 8;
  int64_t i0 = 0;
  for (; i0 + NB * VW <= d; i0 += NB * VW) {
    vec a[2][NB];  // even entries into a[0] (after out's running sum), odd ones into a[1]: twice the independent
                   // sums, which the multiply-adds' latency needs (one set: a step's weighing ran at half speed)
#pragma GCC unroll 8
    for (int64_t c = 0; c < NB; ++c) a[0][c] = *(const vec*)(out + i0 + c * VW), a[1][c] = vec{};
    for (int64_t j = c0; j < c1; j += 2)
#pragma GCC unroll 2
      for (int64_t e = 0; e < 2; ++e)
        if (j + e < c1) {
          const float* vj = v + (slots ? slots[j + e] : j + e) * d + i0;
          const float pj = p[j + e];
#pragma GCC unroll 8
          for (int64_t c = 0; c < NB; ++c) a[e][c] += pj * *(const vec*)(vj + c * VW);
        }
#pragma GCC unroll 8
    for (int64_t c = 0; c < NB; ++c) *(vec*)(out + i0 + c * VW) = a[0][c] + a[1][c];
  }
  for (int64_t j = c0; j < c1; ++j)
    for (int64_t c = i0; c < d; ++c) out[c] += p[j] * v[(slots ? slots[j] : j) * d + c];
}

// How many runs to cut `rows` rows of each of `units` key/value heads into: a few per thread (3 kv heads on 2
// threads alone would leave one idle a third of the time), as many for each thread where the rows allow (a
// 16-token pass in 3 x 4 runs, not 3 x 3: 34 -> 32 us a layer), and of at most RUN rows: a prompt's pass attends
// here too, and a run's scratch is its rows times the cache. attention() and attend_many() share it.
constexpr int64_t RUN = 64;
inline int64_t parts_of(int64_t rows, int64_t units, int64_t threads) {
  int64_t parts = std::min(rows, std::max<int64_t>((rows + RUN - 1) / RUN, (4 * threads + units - 1) / units));
  while (parts < rows && units * parts % threads) ++parts;
  return parts;
}

// Rows that attend over one key/value head: the query heads of its group, for a run of the pass's tokens.
struct Rows {
  const float* const* q;  // each row's query (d)
  const bool* const* ok;  // each row's mask over the entries (null: every entry up to n)
  const int64_t* n;       // each row's entries: it sees entries 0 .. n - 1
  float* const* out;      // each row's output (d), zero on entry
  int32_t* slots;         // scratch: count x whole, each masked row's visible entries
  int64_t count;
};

// Keys and values come in tiles of TILE entries (16 KB of keys at d 64) that every row of the group uses while
// the tile is in the L1 cache: the cache is read once for the group, not once a row (an 8-token pass's
// attention, 30 layers after 330 entries: 7.6 -> 7.2 ms; the sums in registers, weigh(), did the most).
constexpr int64_t TILE = 64;

// softmax(q k^T * scale) v for each row, p: scratch of count x whole floats (whole: n rounded up to vectors).
// A row's arithmetic is the same whatever rows share the call, and whatever entries its mask hides: its scores key
// by key (dots); then the visible ones only, in order (a tree's row sees the cache, its ancestors and itself, with
// its siblings' entries between them), so that its softmax's sums (lane by lane) and its sum of weighted values (a
// running sum kept in out between tiles, even and odd entries apart) run over the same sequence, in the same lanes,
// as the row of a chain or of AR's one-token pass that sees the same entries. Indexed by the entry's slot instead,
// a hidden sibling moved the entries after it into other lanes: ~1e-6 apart from AR in float32, and a flipped
// rounding of the 4-bit forward's 8-bit activations, which then differed by up to 1 in the logits.
void attend_rows(const Rows& r, const float* k, const float* v, int64_t d, float scale, float* p, int64_t whole) {
  constexpr float none = -std::numeric_limits<float>::infinity();
  int64_t most = 0;
  for (int64_t i = 0; i < r.count; ++i) most = std::max(most, r.n[i]);
  for (int64_t j0 = 0; j0 < most; j0 += TILE) {
    // The next tile's keys asked for while several rows work on this one (8 sequences' steps: 9 % faster); a
    // row alone streams the keys, which the CPU's own prefetching keeps up with (asking too was 20 % slower).
    if (r.count > 1)
      for (int64_t c = 0; c < TILE * d && j0 + TILE + c / d < most; c += 64 / sizeof(float))
        __builtin_prefetch(k + (j0 + TILE) * d + c, 0, 3);
    for (int64_t i = 0; i < r.count; ++i) {
      const int64_t n = r.n[i], stop = std::min(n, j0 + TILE);
      for (int64_t j = j0; j < stop; j += KEYS) {  // past n, the last entry again, its score not kept
        const float* key[KEYS];
        for (int64_t a = 0; a < KEYS; ++a) key[a] = k + std::min(j + a, n - 1) * d;
        float s[KEYS];
        dots(r.q[i], key, d, s);
        for (int64_t a = 0; a < KEYS && j + a < stop; ++a) p[i * whole + j + a] = s[a] * scale;
      }
    }
  }
  std::vector<float> sums(r.count);
  std::vector<int64_t> seen(r.count);  // each row's visible entries
  int64_t widest = 0;
  for (int64_t i = 0; i < r.count; ++i) {
    float* pi = p + i * whole;
    int64_t n = r.n[i];
    if (r.ok[i]) {  // the visible scores moved to the front, in order, and where each sits in the cache
      int32_t* slots = r.slots + i * whole;
      int64_t c = 0;
      for (int64_t j = 0; j < n; ++j)
        if (r.ok[i][j]) pi[c] = pi[j], slots[c++] = static_cast<int32_t>(j);
      n = c;
    }
    seen[i] = n, widest = std::max(widest, n);
    const int64_t vn = (n + VW - 1) / VW * VW;
    for (int64_t j = n; j < vn; ++j) pi[j] = none;
    vec top_v = splat(none);  // a vector at a time (a maximum is exact in any order): one a score waited on the last
    for (int64_t j = 0; j < vn; j += VW) {
      const vec x = *(const vec*)(pi + j);
      top_v = x > top_v ? x : top_v;
    }
    float top = none;
    for (int l = 0; l < VW; ++l) top = std::max(top, top_v[l]);
    vec sum{};  // lane by lane over the entries, then the lanes: one sum a vector would wait on the last
    if (top != none)
      for (int64_t j = 0; j < vn; j += VW) {
        *(vec*)(pi + j) = exp_vec(*(const vec*)(pi + j) - top);
        sum += *(const vec*)(pi + j);
      }
    sums[i] = hsum(sum);  // 0: nothing to see, and the row stays zeros
  }
  for (int64_t c0 = 0; c0 < widest; c0 += TILE)
    for (int64_t i = 0; i < r.count; ++i)
      if (sums[i] > 0)
        weigh(p + i * whole, v, r.ok[i] ? r.slots + i * whole : nullptr, c0, std::min(seen[i], c0 + TILE), d, r.out[i]);
  for (int64_t i = 0; i < r.count; ++i)
    if (sums[i] > 0)
      for (int64_t c = 0; c < d; ++c) r.out[i][c] /= sums[i];
}

// One token's row of the fused q/k/v projection (in): its query heads rotated into q, its key heads rotated and its
// value heads copied into the cache, whose key/value heads lie `stride` floats apart (k, v: head 0's entry).
inline void rope_row(const float* in, const float* c, const float* s, int64_t heads, int64_t kv_heads, int64_t d,
                     float* q, float* k, float* v, int64_t stride) {
  for (int64_t h = 0; h < heads; ++h) rotate(in + h * d, c, s, q + h * d, d);
  for (int64_t g = 0; g < kv_heads; ++g) {
    rotate(in + (heads + g) * d, c, s, k + g * stride, d);
    std::copy(in + (heads + kv_heads + g) * d, in + (heads + kv_heads + g + 1) * d, v + g * stride);
  }
}

// A thread's scratch for attend_rows over up to `rows` rows of up to `whole` entries.
struct Scratch {
  std::vector<float> p;
  std::vector<const float*> q;
  std::vector<const bool*> ok;
  std::vector<int64_t> n;
  std::vector<float*> out;
  std::vector<int32_t> slots;
  Scratch(int64_t rows, int64_t whole) : p(rows * whole), q(rows), ok(rows), n(rows), out(rows), slots(rows * whole) {}
  Rows rows(int64_t count) { return Rows{q.data(), ok.data(), n.data(), out.data(), slots.data(), count}; }
};

}  // namespace
