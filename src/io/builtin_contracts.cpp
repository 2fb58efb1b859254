// The I/O contracts IOManagerRegistry::instance() starts with.
#include "io/hf_static_io_manager.h"

namespace hfstatic {

namespace {

IOContract hf_static_contract(int64_t version) {
  return {hf_static::kContract, version, [version] { return std::make_unique<HfStaticIOManager>(version); },
          [version](const Program& program) { return hf_static_violations(program, version); },
          [version](const Program& program) {
            std::vector<std::string> problems;
            auto metadata = hf_static::read_metadata(program, problems, version);
            if (!metadata) throw ContractError(program.path(), problems, version);
            return hf_static::summary(*metadata);
          }};
}

}  // namespace

void register_builtin_contracts(IOManagerRegistry& registry) {
  registry.add(hf_static_contract(hf_static::kVersion));
  registry.add(hf_static_contract(hf_static::kVersion2));
}

}  // namespace hfstatic
