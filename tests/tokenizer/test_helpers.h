// Shared helpers of the tokenizer tests.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace hfstatic::test {

struct CommandResult {
  int exit_code = -1;
  std::string out;
};

// Runs a shell command, capturing stdout (stderr goes where the command redirects it).
CommandResult run_command(const std::string& command);
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& data);  // tests/support/test_support.cpp
std::string shell_quote(const std::string& s);
std::string temp_dir();

// Directory of the reference npm packages and the reason they cannot be used (empty if usable).
std::string reference_dir();
std::string reference_problem();
// Runs `node SCRIPT ARG` in the reference directory and parses its JSON stdout; throws with a
// message that says how to install the reference when it is missing.
nlohmann::json run_reference(const std::string& script, const std::string& arg);

}  // namespace hfstatic::test
