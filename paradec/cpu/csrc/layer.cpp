// The rest of a decoder layer for the few tokens a decode step feeds: RMSNorm, the rotary embedding with the
// cache write, attention over the cache, and SiLU-gate. float32 on the CPU, Hugging Face's Llama math.
//
// Why: with the products packed (small_gemm.cpp), what was not a product still cost 12 ms of a 47 ms 1-token
// pass and 22 ms of a 60 ms 8-token one (torch.profiler on a Zen 3): ~65 small torch operations a layer (a norm
// is six, the rotary a dozen), each microseconds of dispatch whatever its size, and the attention. Here each
// step is one call. Every row is computed in an order that does not depend on the other rows (attention's rows
// share the reading of the cache, not their sums), so a token gets the same bits in AR's 1-row pass as in a
// verify pass, as with the products. Attention's first version, a row at a time with its sums on the stack,
// cost 9.7 ms of an 8-token pass (30 layers, 330 entries), 2.4 ms of a 1-token one; now 7.2 and 1.7.
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops.h"

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

void check(const at::Tensor& t, int64_t dim, const char* what) {
  TORCH_CHECK(t.dim() == dim && t.scalar_type() == at::kFloat && t.device().is_cpu() && t.is_contiguous(),
              what, ": a contiguous ", dim, "-D float32 CPU tensor");
}

// KEYS keys' dot products with q at once, each with dot()'s arithmetic: its own sum in d order, then its lanes
// in order. The chains of multiply-adds are independent, so the CPU overlaps them (one key's chain alone waits
// on each multiply-add's latency). Every key gets the same bits whichever keys it goes with.
constexpr int64_t KEYS = 8;
inline void dots(const float* q, const float* const* k, int64_t d, float* out) {
  vec a[KEYS] = {};
  int64_t i = 0;
  for (; i + VW <= d; i += VW) {
    const vec qv = *(const vec*)(q + i);
#pragma GCC unroll 8
    for (int64_t j = 0; j < KEYS; ++j) a[j] += qv * *(const vec*)(k[j] + i);
  }
#pragma GCC unroll 8
  for (int64_t j = 0; j < KEYS; ++j) {
    float s = hsum(a[j]);
    for (int64_t c = i; c < d; ++c) s += q[c] * k[j][c];
    out[j] = s;
  }
}

// out (d) += p[j] v[j] for the entries j0 .. j1 - 1 in order (skipping those ok forbids): NB vectors of out at a
// time in registers across the entries (a count known when compiling: with a count known only at run time the
// sums lived on the stack, and each entry waited on the last one's store), the rest of d one by one.
void weigh(const float* p, const float* v, const bool* ok, int64_t j0, int64_t j1, int64_t d, float* out) {
  // Vectors a block: eight independent sums keep the multiply-add units busy, and with AVX2 eight are a head of
  // 64; with AVX-512 four are (blocks of eight, 128 floats, would leave such a head all to the scalar rest).
  constexpr int64_t NB = VW == 16 ? 4 : 8;
  int64_t i0 = 0;
  for (; i0 + NB * VW <= d; i0 += NB * VW) {
    vec a[NB];
#pragma GCC unroll 8
    for (int64_t c = 0; c < NB; ++c) a[c] = *(const vec*)(out + i0 + c * VW);
    for (int64_t j = j0; j < j1; ++j) {
      if (ok && !ok[j]) continue;
      const float* vj = v + j * d + i0;
      const float pj = p[j];
#pragma GCC unroll 8
      for (int64_t c = 0; c < NB; ++c) a[c] += pj * *(const vec*)(vj + c * VW);
    }
#pragma GCC unroll 8
    for (int64_t c = 0; c < NB; ++c) *(vec*)(out + i0 + c * VW) = a[c];
  }
  for (int64_t j = j0; j < j1; ++j)
    if (!ok || ok[j])
      for (int64_t c = i0; c < d; ++c) out[c] += p[j] * v[j * d + c];
}

// Rows that attend over one key/value head: the query heads of its group, for a run of the pass's tokens.
struct Rows {
  const float* const* q;  // each row's query (d)
  const bool* const* ok;  // each row's mask over the entries (null: every entry up to n)
  const int64_t* n;       // each row's entries: it sees entries 0 .. n - 1
  float* const* out;      // each row's output (d), zero on entry
  int64_t count;
};

// Keys and values come in tiles of TILE entries (16 KB of keys at d 64) that every row of the group uses while
// the tile is in the L1 cache: the cache is read once for the group, not once a row (an 8-token pass's
// attention, 30 layers after 330 entries: 7.6 -> 7.2 ms; the sums in registers, weigh(), did the most).
constexpr int64_t TILE = 64;

// softmax(q k^T * scale) v for each row, p: scratch of count x whole floats (whole: n rounded up to vectors).
// A row's arithmetic is the same whatever rows share the call: its scores key by key (dots), its softmax, and
// its sum of weighted values in entry order (a running sum kept in out between tiles, exact as a float).
void attend_rows(const Rows& r, const float* k, const float* v, int64_t d, float scale, float* p, int64_t whole) {
  constexpr float none = -std::numeric_limits<float>::infinity();
  int64_t most = 0;
  for (int64_t i = 0; i < r.count; ++i) most = std::max(most, r.n[i]);
  for (int64_t j0 = 0; j0 < most; j0 += TILE)
    for (int64_t i = 0; i < r.count; ++i) {
      const int64_t n = r.n[i], stop = std::min(n, j0 + TILE);
      for (int64_t j = j0; j < stop; j += KEYS) {  // past n, the last entry again, its score not kept
        const float* key[KEYS];
        for (int64_t a = 0; a < KEYS; ++a) key[a] = k + std::min(j + a, n - 1) * d;
        float s[KEYS];
        dots(r.q[i], key, d, s);
        for (int64_t a = 0; a < KEYS && j + a < stop; ++a)
          p[i * whole + j + a] = r.ok[i] && !r.ok[i][j + a] ? none : s[a] * scale;
      }
    }
  std::vector<float> sums(r.count);
  for (int64_t i = 0; i < r.count; ++i) {
    float* pi = p + i * whole;
    const int64_t n = r.n[i], vn = (n + VW - 1) / VW * VW;
    float top = none;
    for (int64_t j = 0; j < n; ++j) top = std::max(top, pi[j]);
    for (int64_t j = n; j < vn; ++j) pi[j] = none;
    float sum = 0;
    if (top != none)
      for (int64_t j = 0; j < vn; j += VW) {
        *(vec*)(pi + j) = exp_vec(*(const vec*)(pi + j) - top);
        sum += hsum(*(const vec*)(pi + j));
      }
    sums[i] = sum;  // 0: nothing to see, and the row stays zeros
  }
  for (int64_t j0 = 0; j0 < most; j0 += TILE)
    for (int64_t i = 0; i < r.count; ++i)
      if (sums[i] > 0) weigh(p + i * whole, v, r.ok[i], j0, std::min(r.n[i], j0 + TILE), d, r.out[i]);
  for (int64_t i = 0; i < r.count; ++i)
    if (sums[i] > 0)
      for (int64_t c = 0; c < d; ++c) r.out[i][c] /= sums[i];
}

}  // namespace

// x (R, H) -> weight * (x / sqrt(mean(x^2) + eps)), row by row.
at::Tensor rmsnorm(at::Tensor x, at::Tensor weight, double eps) {
  check(x, 2, "rmsnorm: x");
  weight = weight.contiguous();
  const int64_t R = x.size(0), H = x.size(1);
  TORCH_CHECK(weight.numel() == H && weight.scalar_type() == at::kFloat, "rmsnorm: weight (H) float32");
  auto y = at::empty_like(x);
  const float *xs = x.data_ptr<float>(), *w = weight.data_ptr<float>();
  float* ys = y.data_ptr<float>();
  for (int64_t r = 0; r < R; ++r) {
    const float* xr = xs + r * H;
    const float inv = 1.0f / std::sqrt(dot(xr, xr, H) / H + static_cast<float>(eps));
    for (int64_t j = 0; j < H; ++j) ys[r * H + j] = w[j] * (xr[j] * inv);
  }
  return y;
}

// qkv (B*M, (heads + 2 kv_heads) D): the fused projection's rows; cos, sin (B, M, D); kc, vc (B, kv_heads,
// capacity, D): this layer's cache. Writes the rotated keys and the values at entries start .. start+M-1 and
// returns the rotated queries (B, M, heads, D).
at::Tensor rope_qkv(at::Tensor qkv, at::Tensor cos, at::Tensor sin, at::Tensor kc, at::Tensor vc,
                       int64_t start, int64_t heads, int64_t kv_heads) {
  check(qkv, 2, "rope_qkv: qkv");
  check(cos, 3, "rope_qkv: cos");
  check(sin, 3, "rope_qkv: sin");
  check(kc, 4, "rope_qkv: k cache");
  check(vc, 4, "rope_qkv: v cache");
  const int64_t B = kc.size(0), cap = kc.size(2), D = kc.size(3), M = cos.size(1);
  const int64_t width = (heads + 2 * kv_heads) * D;
  TORCH_CHECK(kc.size(1) == kv_heads && vc.sizes() == kc.sizes() && qkv.size(0) == B * M && qkv.size(1) == width &&
              cos.size(0) == B && cos.size(2) == D && sin.sizes() == cos.sizes() && start + M <= cap,
              "rope_qkv: shapes");
  auto q = at::empty({B, M, heads, D}, qkv.options());
  const float *x = qkv.data_ptr<float>(), *cs = cos.data_ptr<float>(), *sn = sin.data_ptr<float>();
  float *qs = q.data_ptr<float>(), *ks = kc.data_ptr<float>(), *vs = vc.data_ptr<float>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t m = 0; m < M; ++m) {
      const int64_t row = b * M + m;
      const float *in = x + row * width, *c = cs + row * D, *s = sn + row * D;
      for (int64_t h = 0; h < heads; ++h) rotate(in + h * D, c, s, qs + (row * heads + h) * D, D);
      for (int64_t g = 0; g < kv_heads; ++g) {
        const int64_t entry = ((b * kv_heads + g) * cap + start + m) * D;
        rotate(in + (heads + g) * D, c, s, ks + entry, D);
        std::copy(in + (heads + kv_heads + g) * D, in + (heads + kv_heads + g + 1) * D, vs + entry);
      }
    }
  return q;
}

// q (B, M, heads, D) after the cache's first `length` entries were written (the last M are q's own tokens);
// allowed (B, M, length) bool, or none: causal (row m sees the entries up to its own, length - M + m).
// -> softmax(q k^T * scale) v, (B, M, heads, D); a query head shares its group's key/value head (GQA).
at::Tensor attention(at::Tensor q, at::Tensor kc, at::Tensor vc, int64_t length,
                        const c10::optional<at::Tensor>& allowed, double scale) {
  check(q, 4, "attention: q");
  check(kc, 4, "attention: k cache");
  check(vc, 4, "attention: v cache");
  const int64_t B = q.size(0), M = q.size(1), H = q.size(2), D = q.size(3), KV = kc.size(1), cap = kc.size(2);
  TORCH_CHECK(kc.size(0) == B && kc.size(3) == D && vc.sizes() == kc.sizes() && H % KV == 0 && length >= M &&
              length <= cap, "attention: shapes");
  at::Tensor mask = allowed ? allowed->contiguous() : at::Tensor();
  TORCH_CHECK(!allowed || (mask.scalar_type() == at::kBool && mask.numel() == B * M * length),
              "attention: allowed (B, M, length) bool");
  auto out = at::zeros_like(q);
  const float *qs = q.data_ptr<float>(), *ks = kc.data_ptr<float>(), *vs = vc.data_ptr<float>();
  const bool* ok = allowed ? mask.data_ptr<bool>() : nullptr;
  float* os = out.data_ptr<float>();
  // Work: a key/value head's group of G query heads times the M tokens, in `parts` runs of rows each, so that
  // there are a few per thread (3 kv heads on 2 threads alone would leave one idle a third of the time), as
  // many for each thread where the rows allow (a 16-token pass in 3 x 4 runs, not 3 x 3: 34 -> 32 us a layer).
  const int64_t G = H / KV, units = B * KV, threads = at::get_num_threads();
  int64_t parts = std::min(G * M, (4 * threads + units - 1) / units);
  while (parts < G * M && units * parts % threads) ++parts;
  const int64_t per = (G * M + parts - 1) / parts, whole = (length + VW - 1) / VW * VW;
  at::parallel_for(0, units * parts, 1, [&](int64_t lo, int64_t hi) {
    std::vector<float> p(per * whole);
    std::vector<const float*> qr(per);
    std::vector<const bool*> okr(per);
    std::vector<int64_t> n(per);
    std::vector<float*> outr(per);
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t b = t / parts / KV, g = t / parts % KV, first = t % parts * per;
      const int64_t count = std::min(per, G * M - first);
      for (int64_t i = 0; i < count; ++i) {  // row first + i of the group: token m, query head h
        const int64_t m = (first + i) / G, h = g * G + (first + i) % G, row = (b * M + m) * H + h;
        qr[i] = qs + row * D, outr[i] = os + row * D;
        okr[i] = ok ? ok + (b * M + m) * length : nullptr;
        n[i] = ok ? length : length - M + m + 1;
      }
      const int64_t kv = (b * KV + g) * cap * D;
      attend_rows(Rows{qr.data(), okr.data(), n.data(), outr.data(), count}, ks + kv, vs + kv, D,
                  static_cast<float>(scale), p.data(), whole);
    }
  });
  return out;
}

// Batched decoding's attention step: several sequences' rows of one pass, each sequence on its own cache, in one
// call a layer (a call for each sequence, twice a layer: with their Python, 15 % of AR's decode step at batch 8).
// qkv (R, (heads + 2 kv_heads) D): every sequence's rows, one after another; cos, sin (R, D); for sequence s:
// ks[s], vs[s] its whole cache (layers, 1, kv_heads, capacity, D), of which this layer's is written and read,
// starts[s] its entries before the pass, counts[s] its rows, allowed[s] (1, counts[s], starts[s] + counts[s])
// bool or none: causal. Each row's rotary, cache write and attention are rope_qkv's and attention()'s, so a
// sequence's bits are those it gets alone. -> (R, heads * D).
at::Tensor attend_many(at::Tensor qkv, at::Tensor cos, at::Tensor sin, const std::vector<at::Tensor>& ks,
                          const std::vector<at::Tensor>& vs, int64_t layer, const std::vector<int64_t>& starts,
                          const std::vector<int64_t>& counts, const std::vector<c10::optional<at::Tensor>>& allowed,
                          int64_t heads, int64_t kv_heads, double scale) {
  check(qkv, 2, "attend_many: qkv");
  check(cos, 2, "attend_many: cos");
  check(sin, 2, "attend_many: sin");
  const int64_t S = ks.size(), R = qkv.size(0), D = cos.size(1), G = heads / kv_heads;
  TORCH_CHECK(S > 0 && vs.size() == ks.size() && starts.size() == ks.size() && counts.size() == ks.size() &&
              allowed.size() == ks.size() && heads % kv_heads == 0 && qkv.size(1) == (heads + 2 * kv_heads) * D &&
              cos.size(0) == R && sin.sizes() == cos.sizes(), "attend_many: shapes");
  std::vector<int64_t> first(S + 1, 0), cap(S);
  std::vector<float*> kp(S), vp(S);
  std::vector<const bool*> ok(S, nullptr);
  std::vector<at::Tensor> masks(S);
  for (int64_t s = 0; s < S; ++s) {
    check(ks[s], 5, "attend_many: k cache");
    check(vs[s], 5, "attend_many: v cache");
    const at::Tensor& k = ks[s];
    TORCH_CHECK(k.size(1) == 1 && k.size(2) == kv_heads && k.size(4) == D && vs[s].sizes() == k.sizes() &&
                0 <= layer && layer < k.size(0) && counts[s] > 0 && starts[s] >= 0 &&
                starts[s] + counts[s] <= k.size(3), "attend_many: a cache's shape");
    cap[s] = k.size(3);
    kp[s] = k.data_ptr<float>() + layer * kv_heads * cap[s] * D;
    vp[s] = vs[s].data_ptr<float>() + layer * kv_heads * cap[s] * D;
    first[s + 1] = first[s] + counts[s];
    if (allowed[s]) {
      masks[s] = allowed[s]->contiguous();
      TORCH_CHECK(masks[s].scalar_type() == at::kBool && masks[s].numel() == counts[s] * (starts[s] + counts[s]),
                  "attend_many: allowed (1, M, length) bool");
      ok[s] = masks[s].data_ptr<bool>();
    }
  }
  TORCH_CHECK(first[S] == R, "attend_many: the counts sum to qkv's rows");
  const int64_t width = (heads + 2 * kv_heads) * D;
  auto q = at::empty({R, heads, D}, qkv.options());
  auto out = at::zeros({R, heads * D}, qkv.options());
  const float *x = qkv.data_ptr<float>(), *cs = cos.data_ptr<float>(), *sn = sin.data_ptr<float>();
  float *qs = q.data_ptr<float>(), *os = out.data_ptr<float>();
  for (int64_t s = 0; s < S; ++s)  // rope_qkv's arithmetic, row by row
    for (int64_t m = 0; m < counts[s]; ++m) {
      const int64_t row = first[s] + m;
      const float *in = x + row * width, *c = cs + row * D, *sv = sn + row * D;
      for (int64_t h = 0; h < heads; ++h) rotate(in + h * D, c, sv, qs + (row * heads + h) * D, D);
      for (int64_t g = 0; g < kv_heads; ++g) {
        const int64_t entry = (g * cap[s] + starts[s] + m) * D;
        rotate(in + (heads + g) * D, c, sv, kp[s] + entry, D);
        std::copy(in + (heads + kv_heads + g) * D, in + (heads + kv_heads + g + 1) * D, vp[s] + entry);
      }
    }
  // Work: runs of a group's rows (query heads x the sequence's tokens), as attention() cuts them, for every
  // sequence and key/value head, all on torch's threads at once.
  struct Run { int64_t s, g, first, count; };
  std::vector<Run> runs;
  const int64_t threads = at::get_num_threads(), units = S * kv_heads;
  int64_t longest = 0, most = 0;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t rows = G * counts[s], parts = std::min(rows, std::max<int64_t>(1, (4 * threads + units - 1) / units));
    const int64_t per = (rows + parts - 1) / parts;
    for (int64_t g = 0; g < kv_heads; ++g)
      for (int64_t f = 0; f < rows; f += per) runs.push_back({s, g, f, std::min(per, rows - f)});
    most = std::max(most, per);
    longest = std::max(longest, starts[s] + counts[s]);
  }
  const int64_t whole = (longest + VW - 1) / VW * VW;
  at::parallel_for(0, runs.size(), 1, [&](int64_t lo, int64_t hi) {
    std::vector<float> p(most * whole);
    std::vector<const float*> qr(most);
    std::vector<const bool*> okr(most);
    std::vector<int64_t> n(most);
    std::vector<float*> outr(most);
    for (int64_t t = lo; t < hi; ++t) {
      const Run& r = runs[t];
      const int64_t length = starts[r.s] + counts[r.s];
      for (int64_t i = 0; i < r.count; ++i) {  // row r.first + i of the group: token m, query head h
        const int64_t m = (r.first + i) / G, h = r.g * G + (r.first + i) % G, row = first[r.s] + m;
        qr[i] = qs + (row * heads + h) * D, outr[i] = os + (row * heads + h) * D;
        okr[i] = ok[r.s] ? ok[r.s] + m * length : nullptr;
        n[i] = ok[r.s] ? length : starts[r.s] + m + 1;
      }
      const int64_t kv = r.g * cap[r.s] * D;
      attend_rows(Rows{qr.data(), okr.data(), n.data(), outr.data(), r.count}, kp[r.s] + kv, vp[r.s] + kv, D,
                  static_cast<float>(scale), p.data(), whole);
    }
  });
  return out;
}

// gate_up (R, 2I), the fused projection's rows: gate then up -> silu(gate) * up (R, I), silu(g) = g / (1 + e^-g).
at::Tensor silu_mul(at::Tensor gate_up) {
  check(gate_up, 2, "silu_mul: gate_up");
  const int64_t R = gate_up.size(0), I = gate_up.size(1) / 2;
  TORCH_CHECK(gate_up.size(1) == 2 * I, "silu_mul: an even width");
  auto y = at::empty({R, I}, gate_up.options());
  const float* x = gate_up.data_ptr<float>();
  float* ys = y.data_ptr<float>();
  // Runs of 4 rows on torch's threads (a 16-token pass: 20 -> 11 us a layer on 2 threads); up to 4 rows on this one.
  at::parallel_for(0, R, 4, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float *g = x + r * 2 * I, *u = g + I;
      float* out = ys + r * I;
      int64_t i = 0;
      for (; i + VW <= I; i += VW) {
        const vec gv = *(const vec*)(g + i);
        *(vec*)(out + i) = gv / (1.0f + exp_vec(-gv)) * *(const vec*)(u + i);
      }
      for (; i < I; ++i) out[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
    }
  });
  return y;
}
