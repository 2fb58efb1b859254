// The I/O contracts IOManagerRegistry::instance() starts with.
#include "io/hf_static_io_manager.h"

namespace hfstatic {

void register_builtin_contracts(IOManagerRegistry& registry) {
  registry.add({hf_static::kContract, hf_static::kVersion, [] { return std::make_unique<HfStaticIOManager>(); },
                hf_static_v1_violations,
                [](const Program& program) {
                  std::vector<std::string> problems;
                  auto metadata = hf_static::read_metadata(program, problems);
                  if (!metadata) throw ContractError(program.path(), problems);
                  return hf_static::summary(*metadata);
                }});
}

}  // namespace hfstatic
