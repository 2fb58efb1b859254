// The FMA probe with AVX2 + FMA (8 float lanes). Compiled for the baseline target; every
// function below the pragma carries the target attribute and runs only after a CPU check.
#include <immintrin.h>

#include <cstdint>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace hfstatic::bench::avx2 {

namespace {
using V = __m256;
constexpr int W = 8;
V set1(float a) { return _mm256_set1_ps(a); }
V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
V add(V a, V b) { return _mm256_add_ps(a, b); }
void store(float* p, V v) { _mm256_storeu_ps(p, v); }
}  // namespace

#include "bench/fma_probe_simd.inc"

}  // namespace hfstatic::bench::avx2

#pragma GCC pop_options
