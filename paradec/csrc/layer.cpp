// The rest of a decoder layer for the few tokens a decode step feeds: RMSNorm, the rotary embedding with the
// cache write, attention over the cache, and SiLU-gate. float32 on the CPU, Hugging Face's Llama math.
//
// Why: with the products packed (small_gemm.cpp), what was not a product still cost 12 ms of a 47 ms 1-token
// pass and 22 ms of a 60 ms 8-token one (torch.profiler on a Zen 3): ~65 small torch operations a layer (a norm
// is six, the rotary a dozen), each microseconds of dispatch whatever its size, and the attention. Here each
// step is one call. Every row is computed on its own, in an order that does not depend on the other rows, so a
// token gets the same bits in AR's 1-row pass as in a verify pass, as with the products.
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

// One query row against n cache entries (keys k, values v: n x d), ok[j] false where the row may not look
// (null: every entry); p: n scratch floats rounded up to whole vectors. out (d) is zero on entry.
void attend_row(const float* q, const float* k, const float* v, const bool* ok, int64_t n, int64_t d, float scale,
                float* p, float* out) {
  float top = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) {
    p[j] = ok && !ok[j] ? -std::numeric_limits<float>::infinity() : dot(q, k + j * d, d) * scale;
    top = std::max(top, p[j]);
  }
  if (top == -std::numeric_limits<float>::infinity()) return;  // nothing to see: zeros
  const int64_t whole = (n + VW - 1) / VW * VW;
  for (int64_t j = n; j < whole; ++j) p[j] = -std::numeric_limits<float>::infinity();
  float sum = 0;
  for (int64_t j = 0; j < whole; j += VW) {
    *(vec*)(p + j) = exp_vec(*(const vec*)(p + j) - top);
    sum += hsum(*(const vec*)(p + j));
  }
  for (int64_t j = 0; j < n; ++j) {
    if (ok && !ok[j]) continue;
    int64_t i = 0;
    for (; i + VW <= d; i += VW) *(vec*)(out + i) += p[j] * *(const vec*)(v + j * d + i);
    for (; i < d; ++i) out[i] += p[j] * v[j * d + i];
  }
  for (int64_t i = 0; i < d; ++i) out[i] /= sum;
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
  const int64_t grain = std::max<int64_t>(1, 65536 / (length * D));  // a thread's share: >= ~64k multiply-adds
  at::parallel_for(0, B * H * M, grain, [&](int64_t lo, int64_t hi) {
    std::vector<float> p((length + VW - 1) / VW * VW);
    for (int64_t t = lo; t < hi; ++t) {  // t = (b, h, m): a head's rows side by side, on the same keys
      const int64_t b = t / (H * M), h = t / M % H, m = t % M, row = (b * M + m) * H + h;
      const int64_t kv = (b * KV + h / (H / KV)) * cap * D;
      attend_row(qs + row * D, ks + kv, vs + kv, ok ? ok + (b * M + m) * length : nullptr,
                 ok ? length : length - M + m + 1, D, static_cast<float>(scale), p.data(), os + row * D);
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
  for (int64_t r = 0; r < R; ++r) {
    const float *g = x + r * 2 * I, *u = g + I;
    float* out = ys + r * I;
    int64_t i = 0;
    for (; i + VW <= I; i += VW) {
      const vec gv = *(const vec*)(g + i);
      *(vec*)(out + i) = gv / (1.0f + exp_vec(-gv)) * *(const vec*)(u + i);
    }
    for (; i < I; ++i) out[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  }
  return y;
}
