// The FMA probe with AVX-512 (16 float lanes). Compiled for the baseline target; every function
// below the pragma carries the target attribute and runs only after a CPU check.
#include <immintrin.h>

#include <cstdint>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")

namespace hfstatic::bench::avx512 {

namespace {
using V = __m512;
constexpr int W = 16;
V set1(float a) { return _mm512_set1_ps(a); }
V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
V add(V a, V b) { return _mm512_add_ps(a, b); }
void store(float* p, V v) { _mm512_storeu_ps(p, v); }
}  // namespace

#include "bench/fma_probe_simd.inc"

}  // namespace hfstatic::bench::avx512

#pragma GCC pop_options
