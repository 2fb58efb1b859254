#include "cli/command.h"

namespace hfstatic::cli {

std::vector<Command>& command_registry() {
  static std::vector<Command> commands;
  return commands;
}

}  // namespace hfstatic::cli
