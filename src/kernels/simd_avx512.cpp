// AVX-512 (F, BW, DQ, VL) kernels (16 float lanes). Compiled for the baseline target; every
// function below the pragma carries the target attribute and runs only after a CPU check.
// GCC 12 reports its own _mm512_undefined_* helpers as maybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "kernels/simd_common.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")

namespace hfstatic::kernels::avx512 {

struct S {
  using V = __m512;
  static constexpr int W = 16;
  static constexpr int MR = 12;  // matrix-multiply tile: MR output features x 2 vectors of rows

  static __mmask16 mask(int n) { return __mmask16((1u << n) - 1); }
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float a) { return _mm512_set1_ps(a); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static V load_bf16(const uint16_t* p) {
    __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  }
  static V load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static V load_f16_n(const uint16_t* p, int n) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask(n), p)); }
  static V load_bf16_n(const uint16_t* p, int n) {
    __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask(n), p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  }
  // W int8 values; the low and the high nibbles (0..15) of W bytes.
  static V load_i8(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static void load_nibbles(const uint8_t* p, V& lo, V& hi) {
    const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    lo = _mm512_cvtepi32_ps(_mm512_and_si512(b, _mm512_set1_epi32(15)));
    hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(b, 4));
  }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void store_n(float* p, V v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }
  static void store_f16(uint16_t* p, V v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static void store_f16_n(uint16_t* p, V v, int n) {
    _mm256_mask_storeu_epi16(p, mask(n), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  // Every lane of v is c (a NaN lane is not).
  static bool all_equal(V v, float c) { return _mm512_cmp_ps_mask(v, set1(c), _CMP_NEQ_UQ) == 0; }
  // x, with c in the lanes where m is c.
  static V masked_fill(V x, V m, float c) {
    return _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask(m, set1(c), _CMP_EQ_OQ), m);
  }
  // r, with x in the lanes where x is NaN.
  static V nan_from(V r, V x) { return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x); }
  // out[0..4) = the sums of a, b, c and d.
  static __m256 fold(V v) { return _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)); }
  static void reduce_add4(V a, V b, V c, V d, float* out) {
    const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(fold(a), fold(b)), _mm256_hadd_ps(fold(c), fold(d)));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)));
  }
  static float reduce_add(V v) { return _mm512_reduce_add_ps(v); }
  static float reduce_max(V v) { return _mm512_reduce_max_ps(v); }
  // e^x with Cephes' polynomial (about 1 ulp); exactly 0 below -87.33 (and for -inf).
  static V exp(V x) {
    const __mmask16 valid = _mm512_cmp_ps_mask(x, set1(-87.3365447504f), _CMP_GE_OQ);
    x = _mm512_max_ps(_mm512_min_ps(x, set1(88.0f)), set1(-87.3365447504f));
    V fx = _mm512_roundscale_ps(mul(x, set1(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x = _mm512_fnmadd_ps(fx, set1(0.693359375f), x);
    x = _mm512_fnmadd_ps(fx, set1(-2.12194440e-4f), x);
    V y = set1(1.9875691500E-4f);
    y = fma(y, x, set1(1.3981999507E-3f));
    y = fma(y, x, set1(8.3334519073E-3f));
    y = fma(y, x, set1(4.1665795894E-2f));
    y = fma(y, x, set1(1.6666665459E-1f));
    y = fma(y, x, set1(5.0000001201E-1f));
    y = fma(y, mul(x, x), add(x, set1(1.0f)));
    __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(fx), _mm512_set1_epi32(127)), 23);
    return _mm512_maskz_mov_ps(valid, mul(y, _mm512_castsi512_ps(e)));
  }
};

namespace {

// r[c][i] = r[i][c] for a 16 x 16 block of floats (beside the 8 x 8 one in simd_impl.inc).
__attribute__((always_inline)) inline void transpose(__m512 (&r)[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
  }
  // r[4q + m] now holds, in its 128-bit lane j, column 4j + m of rows 4q..4q+3.
  for (int h = 0; h < 2; ++h)
    for (int m = 0; m < 4; ++m) {
      t[8 * h + m] = _mm512_shuffle_f32x4(r[8 * h + m], r[8 * h + 4 + m], 0x88);
      t[8 * h + 4 + m] = _mm512_shuffle_f32x4(r[8 * h + m], r[8 * h + 4 + m], 0xdd);
    }
  for (int m = 0; m < 8; ++m) {
    r[m] = _mm512_shuffle_f32x4(t[m], t[8 + m], 0x88);
    r[8 + m] = _mm512_shuffle_f32x4(t[m], t[8 + m], 0xdd);
  }
}

}  // namespace

// The quantized matrix-vector product, plain and with the VNNI dot instruction.
#define HFSTATIC_QUANT_32_REGISTERS
namespace quant_plain {
#include "kernels/simd_quant_dot.inc"
}  // namespace quant_plain

}  // namespace hfstatic::kernels::avx512

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c")
namespace hfstatic::kernels::avx512::quant_vnni {
#define HFSTATIC_QUANT_DPBUSD _mm256_dpbusd_epi32
#define HFSTATIC_QUANT_DPBUSD512 _mm512_dpbusd_epi32
#include "kernels/simd_quant_dot.inc"
#undef HFSTATIC_QUANT_DPBUSD512
#undef HFSTATIC_QUANT_DPBUSD
}  // namespace hfstatic::kernels::avx512::quant_vnni
#pragma GCC pop_options
#define HFSTATIC_QUANT_WIDE_DOTS  // quant_vnni::quant_matvec_rows_wide: the avx512-vnni-512 table
#define HFSTATIC_QUANTIZE_512     // quantize_row's whole blocks of groups of 32 on 512-bit vectors

namespace hfstatic::kernels::avx512 {

#include "kernels/simd_impl.inc"

}  // namespace hfstatic::kernels::avx512

#pragma GCC pop_options
