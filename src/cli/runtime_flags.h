// The runtime options of a command that runs a program: the environment (frontend/runtime_env.h),
// then the flags.
#pragma once
#include "executor/runtime_options.h"

namespace hfstatic::cli {

class Args;
// --max-buffer-mib N: the caches, masks and arenas a program may ask for (default 4x its
// weights + 512 MiB).
inline constexpr const char* kMaxBufferFlag = "--max-buffer-mib";

// The environment's switches; an HFSTATIC_ISA it does not know is a UsageError.
RuntimeOptions runtime_options_from_env();
// The environment, then --max-buffer-mib.
RuntimeOptions runtime_options(const Args& args);

}  // namespace hfstatic::cli
