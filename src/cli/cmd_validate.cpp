// hfstatic validate: check a program against its I/O contract, listing every violation.
#include <cstdio>

#include "cli/args.h"
#include "frontend/program_check.h"
#include "io/io_manager.h"

namespace hfstatic::cli {
namespace {

int run_validate(const std::vector<std::string>& argv) {
  Args args(argv, {}, {});
  args.expect_positional(1, "FILE (a program file)");
  const std::string& path = args.positional()[0];
  auto program = Program::load(path);
  const std::vector<std::string> problems = frontend::program_problems(program);
  if (!problems.empty()) {
    std::fprintf(stderr, "%s: %zu problem%s\n", path.c_str(), problems.size(), problems.size() == 1 ? "" : "s");
    for (const auto& p : problems) std::fprintf(stderr, "%s: %s\n", path.c_str(), p.c_str());
    return kExitError;
  }
  std::printf("%s: valid %s\n", path.c_str(), IOManagerRegistry::instance().describe(*program).c_str());
  return kExitOk;
}

}  // namespace

HFSTATIC_COMMAND("validate", "check a program against its I/O contract, listing every violation", "FILE", run_validate);

}  // namespace hfstatic::cli
