// The bench's FMA probe runs with the vectors of every ISA this CPU supports and counts FLOPs.
#include <gtest/gtest.h>

#include "bench/fma_probe.h"

namespace hfstatic::bench {
namespace {

TEST(FmaProbe, CountsFlops) {
  for (kernels::Isa isa : {kernels::Isa::Scalar, kernels::Isa::Avx2, kernels::Isa::Avx512}) {
    if (kernels::isa_supported(isa)) {
      EXPECT_GT(fma_probe(isa, 100), 0.0) << kernels::isa_name(isa);
    }
  }
}

}  // namespace
}  // namespace hfstatic::bench
