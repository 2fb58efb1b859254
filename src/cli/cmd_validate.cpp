// hfstatic validate: check a program against its I/O contract, listing every violation; with
// --check-weights, also what its weights hold (NaN, infinity, zero scales).
#include <cstdio>

#include "cli/args.h"
#include "format/weight_check.h"
#include "frontend/program_check.h"
#include "io/io_manager.h"

namespace hfstatic::cli {
namespace {

int run_validate(const std::vector<std::string>& argv) {
  Args args(argv, {}, {"--check-weights"});
  args.expect_positional(1, "FILE (a program file)");
  const std::string& path = args.positional()[0];
  auto program = Program::load(path);
  std::vector<std::string> problems = frontend::program_problems(program);
  if (args.has("--check-weights")) {
    WeightCheck weights = check_weights(*program);
    for (const auto& note : weights.notes) std::printf("%s: note: %s\n", path.c_str(), note.c_str());
    if (weights.problems.empty())
      std::printf("%s: weights: %zu float tensors (%.1f MiB) hold no NaN or infinity\n", path.c_str(), weights.tensors,
                  double(weights.bytes) / double(1 << 20));
    problems.insert(problems.end(), weights.problems.begin(), weights.problems.end());
  }
  if (!problems.empty()) {
    std::fprintf(stderr, "%s: %zu problem%s\n", path.c_str(), problems.size(), problems.size() == 1 ? "" : "s");
    for (const auto& p : problems) std::fprintf(stderr, "%s: %s\n", path.c_str(), p.c_str());
    return kExitError;
  }
  std::printf("%s: valid %s\n", path.c_str(), IOManagerRegistry::instance().describe(*program).c_str());
  return kExitOk;
}

}  // namespace

HFSTATIC_COMMAND("validate",
                 "check a program against its I/O contract, listing every violation; --check-weights: also "
                 "scan its weights for NaN and infinity, and quantized scales for zero",
                 "[--check-weights] FILE", run_validate);

}  // namespace hfstatic::cli
