// The single-precision peak probe of the bench: independent FMAs on registers, with the
// instructions of one kernel ISA (fma_probe_avx2.cpp and fma_probe_avx512.cpp carry their own
// target pragmas, as the kernels do, and run only on a CPU that supports them).
#pragma once
#include <cstdint>

#include "kernels/isa.h"

namespace hfstatic::bench {

// `iters` rounds of independent FMAs with the vectors of `isa` (supported by this CPU: see
// kernels::isa_supported); returns the floating-point operations performed (2 per lane per FMA).
double fma_probe(kernels::Isa isa, int64_t iters);

}  // namespace hfstatic::bench
