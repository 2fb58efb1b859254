// Entry point of the hfstatic tool: dispatches to a registered subcommand.
#include <cstdio>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/command.h"

using namespace hfstatic::cli;

static void print_help() {
  std::fprintf(stdout, "usage: hfstatic COMMAND [ARGS]\n\ncommands:\n");
  for (const auto& c : command_registry()) std::fprintf(stdout, "  %-16s %s\n", c.name.c_str(), c.summary.c_str());
  std::fprintf(stdout, "\nhfstatic COMMAND --help shows a command's flags.\n");
}

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // With no command, run the embedded default program.
  std::string name = args.empty() ? "run" : args[0];
  if (!args.empty()) args.erase(args.begin());
  if (name == "-h" || name == "--help" || name == "help") {
    print_help();
    return kExitOk;
  }
  for (const auto& c : command_registry()) {
    if (c.name != name) continue;
    for (const auto& a : args) {
      if (a == "-h" || a == "--help") {
        std::fprintf(stdout, "usage: hfstatic %s %s\n", c.name.c_str(), c.usage.c_str());
        return kExitOk;
      }
    }
    try {
      return c.run(args);
    } catch (const UsageError& e) {
      std::fprintf(stderr, "hfstatic %s: %s (see hfstatic %s --help)\n", name.c_str(), e.message.c_str(), name.c_str());
      return kExitUsage;
    } catch (const std::bad_alloc&) {
      // The inputs are checked against what they may ask for; this is the backstop.
      std::fprintf(stderr, "hfstatic %s: error: out of memory\n", name.c_str());
      return kExitError;
    } catch (const std::length_error&) {
      std::fprintf(stderr, "hfstatic %s: error: a size past what can be allocated\n", name.c_str());
      return kExitError;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "hfstatic %s: error: %s\n", name.c_str(), e.what());
      return kExitError;
    }
  }
  std::fprintf(stderr, "hfstatic: unknown command '%s' (see hfstatic --help)\n", name.c_str());
  return kExitUsage;
}
