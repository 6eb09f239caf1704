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

#include "layer_math.h"
#include "ops.h"

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
      const int64_t row = b * M + m, entry = (b * kv_heads * cap + start + m) * D;
      rope_row(x + row * width, cs + row * D, sn + row * D, heads, kv_heads, D, qs + row * heads * D, ks + entry,
               vs + entry, cap * D);
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
  // Work: a key/value head's group of G query heads times the M tokens, in `parts` runs of rows each (parts_of).
  const int64_t G = H / KV, units = B * KV, parts = parts_of(G * M, units, at::get_num_threads());
  const int64_t per = (G * M + parts - 1) / parts, whole = (length + VW - 1) / VW * VW;
  at::parallel_for(0, units * parts, 1, [&](int64_t lo, int64_t hi) {
    Scratch w(per, whole);
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t b = t / parts / KV, g = t / parts % KV, first = t % parts * per;
      const int64_t count = std::min(per, G * M - first);
      for (int64_t i = 0; i < count; ++i) {  // row first + i of the group: token m, query head h
        const int64_t m = (first + i) / G, h = g * G + (first + i) % G, row = (b * M + m) * H + h;
        w.q[i] = qs + row * D, w.out[i] = os + row * D;
        w.ok[i] = ok ? ok + (b * M + m) * length : nullptr;
        w.n[i] = ok ? length : length - M + m + 1;
      }
      const int64_t kv = (b * KV + g) * cap * D;
      attend_rows(w.rows(count), ks + kv, vs + kv, D, static_cast<float>(scale), w.p.data(), whole);
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
