// Subcommand registry of the hfstatic tool. Each cmd_*.cpp registers its commands with
// HFSTATIC_COMMAND; main() dispatches on the first argument.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace hfstatic::cli {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // runtime or validation error
inline constexpr int kExitUsage = 2;  // bad flag, missing argument

// Thrown by argument parsing; main() prints it and exits with kExitUsage.
struct UsageError {
  std::string message;
};

using CommandFn = std::function<int(const std::vector<std::string>& args)>;

struct Command {
  std::string name;
  std::string summary;
  std::string usage;
  CommandFn run;
};

std::vector<Command>& command_registry();

struct CommandRegistrar {
  explicit CommandRegistrar(Command command) { command_registry().push_back(std::move(command)); }
};

#define HFSTATIC_CONCAT_INNER(a, b) a##b
#define HFSTATIC_CONCAT(a, b) HFSTATIC_CONCAT_INNER(a, b)
#define HFSTATIC_COMMAND(name, summary, usage, fn) \
  static ::hfstatic::cli::CommandRegistrar HFSTATIC_CONCAT(hfstatic_command_, __LINE__)({name, summary, usage, fn})

}  // namespace hfstatic::cli
