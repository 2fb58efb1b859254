// The program linked into the tool at build time, run when no -m is given.
#pragma once
#include <cstdint>
#include <span>

namespace hfstatic::cli {

inline constexpr const char* kDefaultProgramName = "<embedded default program>";
std::span<const uint8_t> default_program_bytes();

}  // namespace hfstatic::cli
