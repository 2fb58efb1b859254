// AVX2 + FMA + F16C kernels (8 float lanes). Compiled for the baseline target; every function
// below the pragma carries the target attribute and runs only after a CPU check.
#include <immintrin.h>

#include "kernels/simd_common.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace hfstatic::kernels::avx2 {

struct S {
  using V = __m256;
  static constexpr int W = 8;
  static constexpr int MR = 6;  // matrix-multiply tile: MR output features x 2 vectors of rows

  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float a) { return _mm256_set1_ps(a); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static V load_bf16(const uint16_t* p) {
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
  template <typename T>
  static V load_n(const T* p, int n, V (*full)(const T*)) {
    alignas(32) T t[W] = {};
    for (int i = 0; i < n; ++i) t[i] = p[i];
    return full(t);
  }
  static V load_n(const float* p, int n) { return load_n<float>(p, n, load); }
  static V load_f16_n(const uint16_t* p, int n) { return load_n<uint16_t>(p, n, load_f16); }
  static V load_bf16_n(const uint16_t* p, int n) { return load_n<uint16_t>(p, n, load_bf16); }
  // W int8 values; the low and the high nibbles (0..15) of W bytes.
  static V load_i8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static void load_nibbles(const uint8_t* p, V& lo, V& hi) {
    const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    lo = _mm256_cvtepi32_ps(_mm256_and_si256(b, _mm256_set1_epi32(15)));
    hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(b, 4));
  }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static void store_n(float* p, V v, int n) {  // lanes [0, n): 4, then 2, then 1 at a time
    __m128 part = _mm256_castps256_ps128(v);
    if (n >= 4) {
      _mm_storeu_ps(p, part);
      part = _mm256_extractf128_ps(v, 1), p += 4, n -= 4;
    }
    if (n == 4) return _mm_storeu_ps(p, part);
    if (n >= 2) {
      _mm_storel_pi(reinterpret_cast<__m64*>(p), part);
      part = _mm_movehl_ps(part, part), p += 2, n -= 2;
    }
    if (n == 1) _mm_store_ss(p, part);
  }
  static void store_f16(uint16_t* p, V v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static void store_f16_n(uint16_t* p, V v, int n) {
    alignas(16) uint16_t t[W];
    _mm_store_si128(reinterpret_cast<__m128i*>(t), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    for (int i = 0; i < n; ++i) p[i] = t[i];
  }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  // Every lane of v is c (a NaN lane is not).
  static bool all_equal(V v, float c) { return _mm256_movemask_ps(_mm256_cmp_ps(v, set1(c), _CMP_NEQ_UQ)) == 0; }
  // x, with c in the lanes where m is c.
  static V masked_fill(V x, V m, float c) { return _mm256_blendv_ps(x, m, _mm256_cmp_ps(m, set1(c), _CMP_EQ_OQ)); }
  // r, with x in the lanes where x is NaN.
  static V nan_from(V r, V x) { return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)); }
  // out[0..4) = the sums of a, b, c and d.
  static void reduce_add4(V a, V b, V c, V d, float* out) {
    const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)));
  }
  static float reduce_add(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float reduce_max(V v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  // e^x with Cephes' polynomial (about 1 ulp); exactly 0 below -87.33 (and for -inf).
  static V exp(V x) {
    const V valid = _mm256_cmp_ps(x, set1(-87.3365447504f), _CMP_GE_OQ);
    x = _mm256_max_ps(_mm256_min_ps(x, set1(88.0f)), set1(-87.3365447504f));
    V fx = _mm256_round_ps(mul(x, set1(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x = _mm256_fnmadd_ps(fx, set1(0.693359375f), x);
    x = _mm256_fnmadd_ps(fx, set1(-2.12194440e-4f), x);
    V y = set1(1.9875691500E-4f);
    y = fma(y, x, set1(1.3981999507E-3f));
    y = fma(y, x, set1(8.3334519073E-3f));
    y = fma(y, x, set1(4.1665795894E-2f));
    y = fma(y, x, set1(1.6666665459E-1f));
    y = fma(y, x, set1(5.0000001201E-1f));
    y = fma(y, mul(x, x), add(x, set1(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(mul(y, _mm256_castsi256_ps(e)), valid);
  }
};

// The quantized matrix-vector product, plain and with the VNNI dot instruction.
namespace quant_plain {
#include "kernels/simd_quant_dot.inc"
}  // namespace quant_plain

}  // namespace hfstatic::kernels::avx2

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni")
namespace hfstatic::kernels::avx2::quant_vnni {
#define HFSTATIC_QUANT_DPBUSD _mm256_dpbusd_avx_epi32
#include "kernels/simd_quant_dot.inc"
#undef HFSTATIC_QUANT_DPBUSD
}  // namespace hfstatic::kernels::avx2::quant_vnni
#pragma GCC pop_options

namespace hfstatic::kernels::avx2 {

#include "kernels/simd_impl.inc"

}  // namespace hfstatic::kernels::avx2

#pragma GCC pop_options
