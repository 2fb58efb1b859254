// Run-time selection of the kernel implementation: portable scalar code, AVX2+FMA+F16C, or
// AVX-512 (F/BW/DQ/VL). The library is built for the baseline x86-64 (or any other) target;
// the SIMD variants are compiled with per-function target attributes and chosen from what
// the CPU reports. Nothing here is process-wide state: a caller picks a table and keeps it
// (a loaded Method keeps the table of RuntimeOptions::isa).
#pragma once

namespace hfstatic::kernels {

struct KernelTable;  // kernels.h

enum class Isa { Scalar, Avx2, Avx512 };

const char* isa_name(Isa isa);
// Compiled in and supported by this CPU.
bool isa_supported(Isa isa);
// The best supported ISA at or below `cap`.
Isa best_isa(Isa cap = Isa::Avx512);

// The table of `isa`, or nullptr when it is not supported here.
const KernelTable* kernel_table(Isa isa);

}  // namespace hfstatic::kernels
