// Run-time selection of the kernel implementation: portable scalar code, AVX2+FMA+F16C, or
// AVX-512 (F/BW/DQ/VL). The library is built for the baseline x86-64 (or any other) target;
// the SIMD variants are compiled with per-function target attributes and chosen from what
// the CPU reports. HFSTATIC_ISA=scalar|avx2|avx512 in the environment caps the choice.
#pragma once
#include <cstdint>

#include "kernels/kernels.h"
#include "util/dtype.h"

namespace hfstatic::kernels {

enum class Isa { Scalar, Avx2, Avx512 };

const char* isa_name(Isa isa);
// Compiled in and supported by this CPU.
bool isa_supported(Isa isa);
// The best supported ISA, capped by HFSTATIC_ISA.
Isa best_isa();
// The ISA the public kernels dispatch to (initially best_isa()).
Isa active_isa();
// Selects the dispatch target (an unsupported ISA falls back to the best supported one below
// it) and returns the one now active. Not meant to be called while kernels run.
Isa set_active_isa(Isa isa);

// One implementation of every kernel (same contracts as kernels.h).
struct KernelTable {
  void (*load_row)(const void* src, DType type, int64_t n, float* dst);
  void (*store_row)(const float* src, int64_t n, void* dst, DType type);
  void (*linear_group)(const float* x, int64_t rows, int64_t in, const LinearOutput* outputs, int count,
                       const LinearFusion* fusion);
  void (*rms_norm)(const float* x, int64_t rows, int64_t n, const void* w, DType w_type, float eps, float* y);
  void (*rope)(const float* x, float* y, int64_t rows, int64_t heads, int64_t head_dim, const int64_t* positions,
               const float* inv_freq);
  void (*attention)(const float* q, int64_t rows, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                    const void* k_cache, const void* v_cache, DType cache_type, int64_t max_context,
                    const float* mask, float scale, float* out);
  void (*silu_mul)(const float* gate, const float* up, int64_t n, float* out);
  void (*add)(const float* a, const float* b, int64_t n, float* out);
  // Peak-rate probe for the benchmark: `iters` rounds of independent FMAs on registers;
  // returns the number of floating-point operations performed (2 per lane per FMA).
  double (*fma_probe)(int64_t iters);
};

// The table of `isa`, or nullptr when it is not supported here.
const KernelTable* kernel_table(Isa isa);

}  // namespace hfstatic::kernels
