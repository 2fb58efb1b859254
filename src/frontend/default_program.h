// The program linked into the tool and the Python module at build time, run when no program
// is named.
#pragma once
#include <cstdint>
#include <memory>
#include <span>

#include "format/program.h"

namespace hfstatic::frontend {

inline constexpr const char* kDefaultProgramName = "<embedded default program>";
std::span<const uint8_t> default_program_bytes();
// The default program, loaded from its bytes in the binary (nothing is copied).
std::shared_ptr<const Program> default_program();

}  // namespace hfstatic::frontend
