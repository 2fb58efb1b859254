#include "bench/fma_probe.h"

namespace hfstatic::bench {

#ifdef HFSTATIC_X86_SIMD  // set by CMakeLists.txt when fma_probe_*.cpp are built
namespace avx2 {
double fma_probe(int64_t iters);
}
namespace avx512 {
double fma_probe(int64_t iters);
}
#endif

namespace {

double scalar_fma_probe(int64_t iters) {
  float a[8] = {0, 1e-3f, 2e-3f, 3e-3f, 4e-3f, 5e-3f, 6e-3f, 7e-3f};
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 8; ++i) a[i] = a[i] * 0.999999f + 1e-7f;
    __asm__ volatile("" : "+m"(a));
  }
  volatile float sink = a[0] + a[7];
  (void)sink;
  return double(iters) * 8 * 2;
}

}  // namespace

double fma_probe(kernels::Isa isa, int64_t iters) {
  switch (isa) {
    case kernels::Isa::Scalar: break;
#ifdef HFSTATIC_X86_SIMD
    case kernels::Isa::Avx2:
    case kernels::Isa::Avx2Vnni: return avx2::fma_probe(iters);
    case kernels::Isa::Avx512:
    case kernels::Isa::Avx512Vnni:
    case kernels::Isa::Avx512Vnni512: return avx512::fma_probe(iters);
#else
    default: break;
#endif
  }
  return scalar_fma_probe(iters);
}

}  // namespace hfstatic::bench
