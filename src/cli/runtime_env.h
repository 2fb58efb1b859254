// The environment switches of the tool and the bench, read into RuntimeOptions.
#pragma once
#include "executor/runtime_options.h"

namespace hfstatic::cli {

// HFSTATIC_ISA=scalar|avx2|avx512 caps the kernel ISA; HFSTATIC_FOLD=0, HFSTATIC_IDLE_PREFETCH=0
// and HFSTATIC_HUGE_PAGES=0 turn off op folding, idle prefetch and huge pages. Throws UsageError
// for an HFSTATIC_ISA it does not know.
RuntimeOptions runtime_options_from_env();

class Args;
// The environment, then the flags every command that runs a program takes: --max-buffer-mib N
// (the caches, masks and arenas a program may ask for; default 4x its weights + 512 MiB).
inline constexpr const char* kMaxBufferFlag = "--max-buffer-mib";
RuntimeOptions runtime_options(const Args& args);

}  // namespace hfstatic::cli
