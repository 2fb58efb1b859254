// What the kernel tests share: the SIMD ISAs this CPU runs, random inputs, a thread pool around a
// call.
#pragma once
#include <random>
#include <vector>

#include "kernels/isa.h"
#include "kernels/parallel.h"
#include "kernels/thread_pool.h"

namespace hfstatic::kernels::test {

inline std::vector<Isa> simd_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::Avx2, Isa::Avx512})
    if (isa_supported(isa)) out.push_back(isa);
  return out;
}

inline std::vector<float> random_floats(std::mt19937& rng, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Runs fn with a pool of `threads` installed (none for 1).
template <typename Fn>
void with_threads(int threads, Fn fn) {
  if (threads <= 1) {
    fn();
    return;
  }
  ThreadPool pool(threads);
  ScopedThreadPool scope(&pool);
  fn();
}

}  // namespace hfstatic::kernels::test
