// The CPU kernel's arithmetic checked without Python or torch, on whatever platform it is compiled for (make test
// cross-compiles it for aarch64 and runs it under qemu):
//   g++ -O2 -std=c++17 [-march=...] paradec/cpu/csrc/selftest.cpp -o selftest && ./selftest
// The 4-bit products (quant_math.h):
// 1. repacking keeps every weight: a packed row dequantizes to the file's block values;
// 2. the integer sums are right: each output equals the sum, in double, of the dequantized weights times the
//    quantized activations, to float rounding; and the float product of the file's weights and the activations
//    within what 8-bit activations lose;
// 3. batch invariance: a row's outputs have the same bits alone and among 2, 8, 17 and 64 rows, at every place in
//    the pass, and with the columns split among threads at any panel.
// The float32 products (gemm_math.h): near a double product, and a row's bits whatever rows share the pass.
// Attention (layer_math.h): a tree's row, its siblings' entries hidden between it and its ancestors, has the bits
// of the row of a chain that sees the same entries, and a row's bits do not depend on the rows beside it.
// Prints one line per check; exits 1 if any failed.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "gemm_math.h"
#include "layer_math.h"
#include "quant_math.h"

namespace {

using quant::Acts;

int failures = 0;

void expect(bool ok, const char* what, int type, long a, long b) {
  if (!ok) {
    std::printf("FAIL %s (type %d, %ld, %ld)\n", what, type, a, b);
    ++failures;
  }
}

// A random float16 of moderate size (a block scale or minimum): bits built directly.
uint16_t random_half(std::mt19937& gen, bool sign) {
  const uint16_t exp = 8 + gen() % 8, mant = gen() % 1024;
  return static_cast<uint16_t>((sign && gen() % 2 ? 0x8000 : 0) | exp << 10 | mant);
}

// N rows of K / 32 random blocks in the file's format.
std::vector<uint8_t> random_file(int type, int64_t N, int64_t K, std::mt19937& gen) {
  const int64_t fb = quant::file_block_bytes(type);
  std::vector<uint8_t> raw(N * K / quant::QK * fb);
  for (int64_t i = 0; i < static_cast<int64_t>(raw.size()); i += fb) {
    const uint16_t d = random_half(gen, false), m = random_half(gen, true);
    std::memcpy(&raw[i], &d, 2);
    if (type == quant::Q4_1) std::memcpy(&raw[i + 2], &m, 2);
    for (int64_t j = type == quant::Q4_1 ? 4 : 2; j < fb; ++j) raw[i + j] = gen() % 256;
  }
  return raw;
}

// Weight k of row n as the gguf package's numpy dequantizes it from the file's bytes.
float file_weight(const std::vector<uint8_t>& raw, int type, int64_t K, int64_t n, int64_t k) {
  const uint8_t* blk = raw.data() + (n * K / quant::QK + k / quant::QK) * quant::file_block_bytes(type);
  uint16_t hd, hm;
  std::memcpy(&hd, blk, 2);
  const float d = quant::half_to_float(hd);
  const int64_t i = k % quant::QK;
  if (type == quant::Q8_0) return d * static_cast<float>(static_cast<int8_t>(blk[2 + i]));
  std::memcpy(&hm, blk + 2, 2);
  const uint8_t byte = blk[4 + i % 16];
  const volatile float dq = d * static_cast<float>(i < 16 ? byte & 15 : byte >> 4);
  return dq + quant::half_to_float(hm);
}

struct Quantized {  // M rows of activations, quantized
  std::vector<int8_t> q;
  std::vector<float> d, s;
  std::vector<int32_t> sum;
  Acts acts(int64_t K) const { return Acts{q.data(), d.data(), s.data(), sum.data(), K, K / quant::QK}; }
};

Quantized quantize(const std::vector<float>& x, int64_t M, int64_t K) {
  const int64_t B = K / quant::QK;
  Quantized out{std::vector<int8_t>(M * K), std::vector<float>(M * B), std::vector<float>(M * B),
                std::vector<int32_t>(M * B)};
  for (int64_t m = 0; m < M; ++m)
    quant::quantize_row(&x[m * K], K, &out.q[m * K], &out.d[m * B], &out.s[m * B], &out.sum[m * B]);
  return out;
}

std::vector<float> product(int type, const std::vector<float>& x, int64_t M, int64_t K,
                           const std::vector<uint8_t>& packed, int64_t N, int64_t split) {
  const Quantized qx = quantize(x, M, K);
  std::vector<float> y(M * N);
  const int64_t P = quant::panels(N);
  for (int64_t p0 = 0; p0 < P; p0 += split)
    quant::gemm(type, qx.acts(K), M, packed.data(), N, p0, std::min(P, p0 + split), y.data(), nullptr);
  return y;
}

void check(int type, int64_t N, int64_t K, std::mt19937& gen) {
  const std::vector<uint8_t> raw = random_file(type, N, K, gen);
  std::vector<uint8_t> packed(quant::panels(N) * quant::panel_bytes(type, K));
  quant::pack_panels(raw.data(), type, N, K, packed.data(), 0, quant::panels(N));
  std::vector<float> row(K);
  bool same = true;
  for (int64_t n = 0; n < N; ++n) {
    quant::unpack_row(packed.data(), type, K, n, row.data());
    for (int64_t k = 0; k < K; ++k) same &= row[k] == file_weight(raw, type, K, n, k);
  }
  expect(same, "a packed row dequantizes to the file's values", type, N, K);

  const int64_t M = 64;
  std::normal_distribution<float> normal;
  std::vector<float> x(M * K);
  for (float& v : x) v = normal(gen);
  const Quantized qx = quantize(x, M, K);
  const std::vector<float> y = product(type, x, M, K, packed, N, quant::panels(N));
  double worst = 0, worst_float = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double exact = 0, real = 0, scale = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double w = file_weight(raw, type, K, n, k);
        exact += w * qx.d[m * K / quant::QK + k / quant::QK] * qx.q[m * K + k];
        real += w * x[m * K + k];
        scale += std::fabs(w * x[m * K + k]);
      }
      worst = std::max(worst, std::fabs(y[m * N + n] - exact) / scale);
      worst_float = std::max(worst_float, std::fabs(y[m * N + n] - real) / scale);
    }
  expect(worst < 1e-5, "the integer sums (vs double, relative to sum |w x|)", type, N, K);
  expect(worst_float < 2e-2, "the product (vs the float weights and activations)", type, N, K);

  bool invariant = true;
  for (const int64_t rows : {1, 2, 8, 17, 64})
    for (const int64_t first : {int64_t{0}, M - rows}) {
      const std::vector<float> part(x.begin() + first * K, x.begin() + (first + rows) * K);
      for (const int64_t split : {int64_t{1}, int64_t{3}, quant::panels(N)}) {
        const std::vector<float> yp = product(type, part, rows, K, packed, N, split);
        invariant &= std::memcmp(yp.data(), &y[first * N], rows * N * sizeof(float)) == 0;
      }
    }
  expect(invariant, "a row's bits whatever rows and column splits share the pass", type, N, K);
  std::printf("%s type %d N %ld K %ld: relative error %.1e (integer sums), %.1e (vs float)\n",
              failures ? "FAIL" : "ok", type, static_cast<long>(N), static_cast<long>(K), worst, worst_float);
}

// The float32 products: W (N, K) packed as small_gemm.cpp packs it, then rows() panel by panel.
void check_float(int64_t N, int64_t K, std::mt19937& gen) {
  std::normal_distribution<float> normal;
  const int64_t panels = (N + P - 1) / P, M = 64;
  std::vector<float> w(N * K), packed(panels * K * P, 0.0f), x(M * K);
  for (float& v : w) v = normal(gen);
  for (float& v : x) v = normal(gen);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) packed[(n / P * K + k) * P + n % P] = w[n * K + k];
  auto product = [&](const float* xs, int64_t rows_) {
    std::vector<float> y(rows_ * N), acc(rows_ * P);
    for (int64_t p = 0; p < panels; ++p)
      rows(xs, rows_, K, &packed[p * K * P], &y[p * P], N, std::min<int64_t>(P, N - p * P), acc.data(), nullptr,
           nullptr);
    return y;
  };
  const std::vector<float> y = product(x.data(), M);
  double worst = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double exact = 0, scale = 0;
      for (int64_t k = 0; k < K; ++k)
        exact += double(w[n * K + k]) * x[m * K + k], scale += std::fabs(w[n * K + k] * x[m * K + k]);
      worst = std::max(worst, std::fabs(y[m * N + n] - exact) / scale);
    }
  bool invariant = true;
  for (const int64_t m : {1, 2, 8, 17, 64})
    for (const int64_t first : {int64_t{0}, M - m}) {
      const std::vector<float> part = product(&x[first * K], m);
      invariant &= std::memcmp(part.data(), &y[first * N], m * N * sizeof(float)) == 0;
    }
  expect(worst < 1e-5, "the float32 product (vs double)", 0, N, K);
  expect(invariant, "a float32 row's bits whatever rows share the pass", 0, N, K);
  std::printf("%s float32 N %ld K %ld: relative error %.1e\n", worst < 1e-5 && invariant ? "ok" : "FAIL",
              static_cast<long>(N), static_cast<long>(K), worst);
}

// Attention over a cache of `cached` entries and a pass of a pending token, two siblings under it and a child of
// the second sibling: each node's row against the same row in a chain (its ancestors' entries only, in order).
void check_attention(int64_t cached, int64_t d, std::mt19937& gen) {
  std::normal_distribution<float> normal;
  const int64_t n = cached + 4, whole = (n + VW - 1) / VW * VW;
  std::vector<float> k(n * d), v(n * d), q(4 * d);
  for (float& x : k) x = normal(gen);
  for (float& x : v) x = normal(gen);
  for (float& x : q) x = normal(gen);
  const int parents[4] = {-1, 0, 0, 2};
  bool ok_mask[4][64 + 8] = {};
  for (int i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < cached; ++j) ok_mask[i][j] = true;
    for (int a = i; a >= 0; a = parents[a]) ok_mask[i][cached + a] = true;
  }
  auto attend = [&](int64_t count, const float* const* qs, const bool* const* oks, const int64_t* ns,
                    const float* ks, const float* vs) {
    std::vector<float> out(count * d, 0.0f), p(count * whole);
    std::vector<float*> outs(count);
    std::vector<int32_t> slots(count * whole);
    for (int64_t i = 0; i < count; ++i) outs[i] = &out[i * d];
    attend_rows(Rows{qs, oks, ns, outs.data(), slots.data(), count}, ks, vs, d, 0.125f, p.data(), whole);
    return out;
  };
  const float* qs[4] = {&q[0], &q[d], &q[2 * d], &q[3 * d]};
  const bool* oks[4] = {ok_mask[0], ok_mask[1], ok_mask[2], ok_mask[3]};
  const int64_t ns[4] = {n, n, n, n};
  const std::vector<float> tree = attend(4, qs, oks, ns, k.data(), v.data());
  bool same = true;
  for (int i = 0; i < 4; ++i) {  // the chain: the cache, then the node's ancestors' entries and its own
    std::vector<float> ck(k.begin(), k.begin() + cached * d), cv(v.begin(), v.begin() + cached * d);
    std::vector<int> path;
    for (int a = i; a >= 0; a = parents[a]) path.insert(path.begin(), a);
    for (const int a : path) {
      ck.insert(ck.end(), &k[(cached + a) * d], &k[(cached + a + 1) * d]);
      cv.insert(cv.end(), &v[(cached + a) * d], &v[(cached + a + 1) * d]);
    }
    const float* cq[1] = {qs[i]};
    const bool* none[1] = {nullptr};
    const int64_t cn[1] = {static_cast<int64_t>(cached + path.size())};
    const std::vector<float> chain = attend(1, cq, none, cn, ck.data(), cv.data());
    same &= std::memcmp(chain.data(), &tree[i * d], d * sizeof(float)) == 0;
    const std::vector<float> alone = attend(1, qs + i, oks + i, ns + i, k.data(), v.data());
    same &= std::memcmp(alone.data(), &tree[i * d], d * sizeof(float)) == 0;
  }
  expect(same, "a tree's row has its chain's bits, alone or beside its siblings", 0, cached, d);
  std::printf("%s attention after %ld entries, head size %ld\n", same ? "ok" : "FAIL", static_cast<long>(cached),
              static_cast<long>(d));
}

}  // namespace

int main() {
  std::mt19937 gen(1234);
  std::printf("paradec CPU kernel self-test: 4-bit path %s (%d rows a block), float32 vectors of %d\n", quant::PATH,
              quant::MAX_ROWS, VW);
  for (const int type : {quant::Q4_1, quant::Q8_0})
    for (const auto& shape : {std::pair<int64_t, int64_t>{37, 64}, {16, 32}, {100, 576}, {45, 1536}})
      check(type, shape.first, shape.second, gen);
  for (const auto& shape : {std::pair<int64_t, int64_t>{37, 64}, {100, 576}})
    check_float(shape.first, shape.second, gen);
  for (const int64_t cached : {5, 60, 64})
    check_attention(cached, 64, gen);
  std::printf(failures ? "self-test FAILED\n" : "self-test passed\n");
  return failures ? 1 : 0;
}
