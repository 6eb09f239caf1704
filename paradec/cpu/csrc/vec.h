// The vector type every loop of the CPU extension shares, of the machine's own width: no ATen here, so the
// arithmetic headers (gemm_math.h, layer_math.h, quant_math.h) compile into selftest.cpp without torch.
#pragma once
#include <cstdint>

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
