#include "cli/runtime_flags.h"

#include "cli/args.h"
#include "cli/command.h"
#include "frontend/runtime_env.h"
#include "util/error.h"

namespace hfstatic::cli {

RuntimeOptions runtime_options_from_env() {
  try {
    return frontend::runtime_options_from_env();
  } catch (const Error& e) {
    throw UsageError{e.what()};
  }
}

RuntimeOptions runtime_options(const Args& args) {
  RuntimeOptions options = runtime_options_from_env();
  options.max_buffer_bytes = uint64_t(args.get_int(kMaxBufferFlag, 0, 1, frontend::kMaxBufferMib)) << 20;
  return options;
}

}  // namespace hfstatic::cli
