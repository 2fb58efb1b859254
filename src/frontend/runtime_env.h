// The environment switches of the front ends (the tool, the bench, the Python module), read into
// RuntimeOptions. No library reads the environment.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "executor/runtime_options.h"

namespace hfstatic::frontend {

// An ISA by its name (kernels::isa_name: "scalar", "avx2", "avx2-vnni", "avx512",
// "avx512-vnni", "avx512-vnni-512"); nullopt for any other name.
std::optional<kernels::Isa> isa_from_name(std::string_view name);
inline constexpr const char* kIsaNames = "scalar, avx2, avx2-vnni, avx512, avx512-vnni or avx512-vnni-512";

// The largest buffer limit a front end takes (--max-buffer-mib, max_buffer_mib=), in MiB.
inline constexpr int64_t kMaxBufferMib = int64_t(1) << 30;

// HFSTATIC_ISA=scalar|avx2|avx2-vnni|avx512|avx512-vnni|avx512-vnni-512 caps the kernel ISA; HFSTATIC_FOLD=0,
// HFSTATIC_IDLE_PREFETCH=0, HFSTATIC_HUGE_PAGES=0 and HFSTATIC_ACTIVE_ROWS=0 turn off op folding, idle prefetch, huge
// pages and active rows. Throws Error for an HFSTATIC_ISA it does not know.
RuntimeOptions runtime_options_from_env();

}  // namespace hfstatic::frontend
