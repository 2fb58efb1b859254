#include "frontend/program_check.h"

#include "chat/text_check.h"
#include "executor/method.h"
#include "io/io_manager.h"

namespace hfstatic::frontend {
namespace {

// Errors that begin with the program's path, which the caller prints already.
std::string without_path(const std::string& message, const std::string& path) {
  return message.rfind(path + ": ", 0) == 0 ? message.substr(path.size() + 2) : message;
}

}  // namespace

std::vector<std::string> program_problems(const std::shared_ptr<const Program>& program) {
  std::vector<std::string> problems = IOManagerRegistry::instance().validate(*program);
  if (problems.empty()) {
    for (const auto& method : program->spec().methods) {
      try {
        Method::load(program, method.name);
      } catch (const Error& e) {
        problems.push_back(without_path(e.what(), program->path()));
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
  return problems;
}

}  // namespace hfstatic::frontend
