// The environment switches of the tool and the bench, read into RuntimeOptions.
#pragma once
#include "executor/runtime_options.h"

namespace hfstatic::cli {

// HFSTATIC_ISA=scalar|avx2|avx512 caps the kernel ISA; HFSTATIC_FOLD=0, HFSTATIC_IDLE_PREFETCH=0
// and HFSTATIC_HUGE_PAGES=0 turn off op folding, idle prefetch and huge pages. Throws UsageError
// for an HFSTATIC_ISA it does not know.
RuntimeOptions runtime_options_from_env();

}  // namespace hfstatic::cli
