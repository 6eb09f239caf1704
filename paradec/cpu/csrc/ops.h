// What paradec's CPU extension offers (module.cpp binds it to Python), and the vector type its loops share.
// ATen's Tensor and the few factories used, not <torch/extension.h>: its headers took most of a 90 s build
// when every source included them; only module.cpp does now.
#pragma once
#include <ATen/core/Tensor.h>
#include <c10/util/Half.h>

#include <string>
#include <vector>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include "vec.h"


// A tensor as the extension's loops read it, or an error naming what it should be.
inline void check(const at::Tensor& t, int64_t dim, const char* what) {
  TORCH_CHECK(t.dim() == dim && t.scalar_type() == at::kFloat && t.device().is_cpu() && t.is_contiguous(),
              what, ": a contiguous ", dim, "-D float32 CPU tensor");
}

// small_gemm.cpp: the products.
at::Tensor pack(at::Tensor w, bool half);
bool half_weights();
at::Tensor linear(at::Tensor x, at::Tensor packed, int64_t N, const c10::optional<at::Tensor>& bias,
                     const c10::optional<at::Tensor>& residual);
int64_t parallel_pieces();

// layer.cpp: the rest of a decoder layer.
at::Tensor rmsnorm(at::Tensor x, at::Tensor weight, double eps);
at::Tensor rope_qkv(at::Tensor qkv, at::Tensor cos, at::Tensor sin, at::Tensor kc, at::Tensor vc,
                       int64_t start, int64_t heads, int64_t kv_heads);
at::Tensor attention(at::Tensor q, at::Tensor kc, at::Tensor vc, int64_t length,
                        const c10::optional<at::Tensor>& allowed, double scale);
at::Tensor attend_many(at::Tensor qkv, at::Tensor cos, at::Tensor sin, const std::vector<at::Tensor>& ks,
                          const std::vector<at::Tensor>& vs, int64_t layer, const std::vector<int64_t>& starts,
                          const std::vector<int64_t>& counts, const std::vector<c10::optional<at::Tensor>>& allowed,
                          int64_t heads, int64_t kv_heads, double scale);
at::Tensor silu_mul(at::Tensor gate_up);

// quant.cpp: the 4-bit forward's products over a GGUF file's blocks (quant_math.h).
at::Tensor quant_pack(at::Tensor raw, int64_t type, int64_t K);
at::Tensor quant_linear(at::Tensor x, at::Tensor packed, int64_t type, int64_t N,
                        const c10::optional<at::Tensor>& residual);
at::Tensor quant_rows(at::Tensor packed, int64_t type, int64_t N, int64_t K, at::Tensor ids);
at::Tensor quant_select(at::Tensor packed, int64_t type, int64_t N, int64_t K, at::Tensor ids);
std::string quant_path();
