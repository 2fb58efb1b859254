// What the kernel tests share: the SIMD ISAs this CPU runs, random inputs and stored values, a
// thread pool around a call, comparisons with a relative tolerance.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "kernels/parallel.h"
#include "kernels/thread_pool.h"
#include "util/dtype.h"

namespace hfstatic::kernels::test {

// Every SIMD level this CPU runs (the -vnni ones where it has the dot instruction).
inline std::vector<Isa> simd_isas() {
  std::vector<Isa> out;
  for (Isa isa : kIsas)
    if (isa != Isa::Scalar && isa_supported(isa)) out.push_back(isa);
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

inline const float kNegInf = -std::numeric_limits<float>::infinity();

inline std::string label(Isa isa, int threads) {
  return std::string(isa_name(isa)) + " threads=" + std::to_string(threads);
}

// Values stored as `type` (bytes), and the float32 they represent.
struct Stored {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
};

inline Stored stored(std::mt19937& rng, size_t n, DType type, float lo = -1.0f, float hi = 1.0f) {
  Stored s;
  s.values = random_floats(rng, n, lo, hi);
  s.bytes.resize(n * dtype_size(type));
  convert_floats(s.values.data(), DType::F32, s.bytes.data(), type, n);
  convert_floats(s.bytes.data(), type, s.values.data(), DType::F32, n);
  return s;
}

inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::vector<float>& scale,
                         float rel, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const float tol = rel * (scale.empty() ? std::max(1.0f, std::fabs(want[i])) : scale[i]);
    ASSERT_NEAR(got[i], want[i], tol) << what << " at " << i;
  }
}

}  // namespace hfstatic::kernels::test
