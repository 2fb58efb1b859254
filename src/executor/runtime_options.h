// How a loaded program runs. The libraries read no environment variable: the CLI and the bench
// fill these from HFSTATIC_ISA, HFSTATIC_FOLD, HFSTATIC_IDLE_PREFETCH, HFSTATIC_HUGE_PAGES and
// HFSTATIC_ACTIVE_ROWS.
#pragma once
#include <cstdint>
#include <optional>

#include "kernels/isa.h"

namespace hfstatic {

struct RuntimeOptions {
  std::optional<kernels::Isa> isa;  // highest kernel ISA to use; nullopt: the best the CPU has
  bool fold_ops = true;             // fold rms_norm / silu_mul into the linear step that reads it
  bool idle_prefetch = true;        // threads that wait at a region's end prefetch the next's data
  bool huge_pages = true;           // map the program in huge pages (util/huge_pages.h)
  bool active_rows = true;          // a prefill step computes its real rows only, not the whole chunk
  // Caches, masks and arenas a program may ask for, in bytes; 0: 4x its weights + 512 MiB.
  uint64_t max_buffer_bytes = 0;
};

}  // namespace hfstatic
