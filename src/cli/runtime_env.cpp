#include "cli/runtime_env.h"

#include <cstdlib>
#include <string>

#include "cli/args.h"
#include "cli/command.h"
#include "util/env.h"

namespace hfstatic::cli {

RuntimeOptions runtime_options_from_env() {
  RuntimeOptions options;
  if (const char* isa = std::getenv("HFSTATIC_ISA")) {
    const std::string v(isa);
    if (v == "scalar")
      options.isa = kernels::Isa::Scalar;
    else if (v == "avx2")
      options.isa = kernels::Isa::Avx2;
    else if (v == "avx512")
      options.isa = kernels::Isa::Avx512;
    else
      throw UsageError{"HFSTATIC_ISA='" + v + "': expected scalar, avx2 or avx512"};
  }
  options.fold_ops = env_switch_on("HFSTATIC_FOLD");
  options.idle_prefetch = env_switch_on("HFSTATIC_IDLE_PREFETCH");
  options.huge_pages = env_switch_on("HFSTATIC_HUGE_PAGES");
  options.active_rows = env_switch_on("HFSTATIC_ACTIVE_ROWS");
  return options;
}

RuntimeOptions runtime_options(const Args& args) {
  RuntimeOptions options = runtime_options_from_env();
  options.max_buffer_bytes = uint64_t(args.get_int(kMaxBufferFlag, 0, 1, int64_t(1) << 30)) << 20;
  return options;
}

}  // namespace hfstatic::cli
