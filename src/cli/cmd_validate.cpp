// hfstatic validate: check a program against its I/O contract, listing every violation.
#include <cstdio>

#include "chat/text_check.h"
#include "cli/args.h"
#include "executor/method.h"
#include "io/io_manager.h"

namespace hfstatic::cli {
namespace {

// Errors that begin with the program's path, printed after it already.
std::string without_path(const std::string& message, const std::string& path) {
  return message.rfind(path + ": ", 0) == 0 ? message.substr(path.size() + 2) : message;
}

int run_validate(const std::vector<std::string>& argv) {
  Args args(argv, {}, {});
  args.expect_positional(1, "FILE (a program file)");
  const std::string& path = args.positional()[0];
  auto program = Program::load(path);
  const IOManagerRegistry& registry = IOManagerRegistry::instance();
  std::vector<std::string> problems = registry.validate(*program);
  if (problems.empty()) {
    for (const auto& method : program->spec().methods) {
      try {
        Method::load(program, method.name);
      } catch (const Error& e) {
        problems.push_back(without_path(e.what(), path));
      }
    }
  }
  if (const std::string tokenizer = program->embedded_file("tokenizer.json"); !tokenizer.empty()) {
    try {
      check_tokenizer_and_template(tokenizer, program->embedded_file("tokenizer_config.json"));
    } catch (const Error& e) {
      problems.push_back(cat("embedded ", e.what()));
    }
  }
  if (!problems.empty()) {
    std::fprintf(stderr, "%s: %zu problem%s\n", path.c_str(), problems.size(), problems.size() == 1 ? "" : "s");
    for (const auto& p : problems) std::fprintf(stderr, "%s: %s\n", path.c_str(), p.c_str());
    return kExitError;
  }
  std::printf("%s: valid %s\n", path.c_str(), registry.describe(*program).c_str());
  return kExitOk;
}

}  // namespace

HFSTATIC_COMMAND("validate", "check a program against its I/O contract, listing every violation", "FILE", run_validate);

}  // namespace hfstatic::cli
