// Batched decoding's attention step (paradec/cpu/batch.py): every sequence's rows of one pass in one call a
// layer, each sequence on its own cache, with the arithmetic of layer.cpp's rope_qkv and attention.
#include <ATen/Parallel.h>

#include "layer_math.h"
#include "ops.h"

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
      const int64_t row = first[s] + m, entry = (starts[s] + m) * D;
      rope_row(x + row * width, cs + row * D, sn + row * D, heads, kv_heads, D, qs + row * heads * D, kp[s] + entry,
               vp[s] + entry, cap[s] * D);
    }
  // Work: runs of a group's rows (query heads x the sequence's tokens), as attention() cuts them, for every
  // sequence and key/value head, all on torch's threads at once.
  struct Run { int64_t s, g, first, count; };
  std::vector<Run> runs;
  const int64_t threads = at::get_num_threads(), units = S * kv_heads;
  int64_t longest = 0, most = 0;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t rows = G * counts[s], parts = parts_of(rows, units, threads);
    const int64_t per = (rows + parts - 1) / parts;
    for (int64_t g = 0; g < kv_heads; ++g)
      for (int64_t f = 0; f < rows; f += per) runs.push_back({s, g, f, std::min(per, rows - f)});
    most = std::max(most, per);
    longest = std::max(longest, starts[s] + counts[s]);
  }
  const int64_t whole = (longest + VW - 1) / VW * VW;
  at::parallel_for(0, runs.size(), 1, [&](int64_t lo, int64_t hi) {
    Scratch w(most, whole);
    for (int64_t t = lo; t < hi; ++t) {
      const Run& r = runs[t];
      const int64_t length = starts[r.s] + counts[r.s];
      for (int64_t i = 0; i < r.count; ++i) {  // row r.first + i of the group: token m, query head h
        const int64_t m = (r.first + i) / G, h = r.g * G + (r.first + i) % G, row = first[r.s] + m;
        w.q[i] = qs + (row * heads + h) * D, w.out[i] = os + (row * heads + h) * D;
        w.ok[i] = ok[r.s] ? ok[r.s] + m * length : nullptr;
        w.n[i] = ok[r.s] ? length : starts[r.s] + m + 1;
      }
      const int64_t kv = r.g * cap[r.s] * D;
      attend_rows(w.rows(r.count), kp[r.s] + kv, vp[r.s] + kv, D, static_cast<float>(scale), w.p.data(), whole);
    }
  });
  return out;
}
