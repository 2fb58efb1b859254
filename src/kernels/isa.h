// Run-time selection of the kernel implementation: portable scalar code, AVX2+FMA+F16C,
// AVX-512 (F/BW/DQ/VL), and each SIMD level with the VNNI dot instruction for the quantized
// products (AVX-VNNI under AVX2, AVX512-VNNI under AVX-512). The library is built for the baseline x86-64 (or any
// other) target; the SIMD variants are compiled with per-function target attributes and chosen from what the CPU
// reports. Nothing here is process-wide state: a caller picks a table and keeps it (a loaded Method keeps the table of
// RuntimeOptions::isa).
#pragma once

#include <optional>

namespace hfstatic::kernels {

struct KernelTable;  // kernels.h

// In order: a level's table runs on every CPU that runs the next one's, except that a CPU with
// AVX-512 need not have AVX-VNNI (then best_isa passes over avx2-vnni). avx512-vnni-512 is the
// avx512-vnni table with the quantized products' blocks on 512-bit dot instructions: it runs
// wherever avx512-vnni does, and is the default where the CPU runs 512-bit vectors whole.
enum class Isa { Scalar, Avx2, Avx2Vnni, Avx512, Avx512Vnni, Avx512Vnni512 };
inline constexpr Isa kIsas[] = {Isa::Scalar, Isa::Avx2,       Isa::Avx2Vnni,
                                Isa::Avx512, Isa::Avx512Vnni, Isa::Avx512Vnni512};

// "scalar", "avx2", "avx2-vnni", "avx512", "avx512-vnni", "avx512-vnni-512".
const char* isa_name(Isa isa);
// The CPU features that decide which ISAs are supported, as the CPU reports them: "avx2 fma
// f16c avxvnni ..." (those it has), for a record of the host a figure was measured on.
const char* isa_cpu_features();
// Compiled in and supported by this CPU.
bool isa_supported(Isa isa);
// The best supported ISA at or below `cap`. With no cap, the default: the best supported ISA,
// passing over avx512-vnni-512 on a CPU that runs each 512-bit vector instruction as two 256-bit
// halves (AMD Zen 4), where 256-bit dot products decode faster
// (docs/log/2026-12-07-zen4-quantized-decode.md).
Isa best_isa(std::optional<Isa> cap = std::nullopt);
// Whether this CPU runs 512-bit vector instructions as two 256-bit halves (AMD family 25 with
// AVX-512: Zen 4).
bool isa_splits_512_bit_vectors();

// The table of `isa`, or nullptr when it is not supported here.
const KernelTable* kernel_table(Isa isa);

}  // namespace hfstatic::kernels
