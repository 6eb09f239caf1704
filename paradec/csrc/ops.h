// What paradec's CPU extension offers (module.cpp binds it to Python), and the vector type its loops share.
#pragma once
#include <torch/extension.h>

// The machine's own vector width: a wider generic vector than the registers is split by the compiler into
// pieces that spill (a 16-float vector on AVX2 ran 10x slower than torch's GEMM).
#if defined(__AVX512F__)
constexpr int VW = 16;
#elif defined(__AVX__)
constexpr int VW = 8;
#else
constexpr int VW = 4;  // SSE, NEON
#endif
typedef float vec __attribute__((vector_size(VW * 4), aligned(4)));

// small_gemm.cpp: the products.
torch::Tensor pack(torch::Tensor w);
torch::Tensor linear(torch::Tensor x, torch::Tensor packed, int64_t N, const c10::optional<torch::Tensor>& bias,
                     const c10::optional<torch::Tensor>& residual);
int64_t parallel_pieces();

// layer.cpp: the rest of a decoder layer.
torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor weight, double eps);
torch::Tensor rope_qkv(torch::Tensor qkv, torch::Tensor cos, torch::Tensor sin, torch::Tensor kc, torch::Tensor vc,
                       int64_t start, int64_t heads, int64_t kv_heads);
torch::Tensor attention(torch::Tensor q, torch::Tensor kc, torch::Tensor vc, int64_t length,
                        const c10::optional<torch::Tensor>& allowed, double scale);
torch::Tensor silu_mul(torch::Tensor gate_up);
