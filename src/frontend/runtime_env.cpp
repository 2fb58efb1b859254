#include "frontend/runtime_env.h"

#include <cstdlib>
#include <string>

#include "util/env.h"
#include "util/error.h"

namespace hfstatic::frontend {

std::optional<kernels::Isa> isa_from_name(std::string_view name) {
  for (kernels::Isa isa : kernels::kIsas)
    if (name == kernels::isa_name(isa)) return isa;
  return std::nullopt;
}

RuntimeOptions runtime_options_from_env() {
  RuntimeOptions options;
  if (const char* isa = std::getenv("HFSTATIC_ISA")) {
    options.isa = isa_from_name(isa);
    if (!options.isa) fail("HFSTATIC_ISA='", isa, "': expected ", kIsaNames);
  }
  options.fold_ops = env_switch_on("HFSTATIC_FOLD");
  options.idle_prefetch = env_switch_on("HFSTATIC_IDLE_PREFETCH");
  options.huge_pages = env_switch_on("HFSTATIC_HUGE_PAGES");
  options.active_rows = env_switch_on("HFSTATIC_ACTIVE_ROWS");
  return options;
}

}  // namespace hfstatic::frontend
