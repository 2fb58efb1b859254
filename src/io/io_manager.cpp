#include "io/io_manager.h"

#include "contract/hf_static_contract.h"

namespace hfstatic {

const char* step_kind_name(StepKind k) { return k == StepKind::Prefill ? "prefill" : "decode"; }

Status IOManager::step(StepKind kind, int64_t start_pos, std::span<const int64_t> tokens, ThreadPool* pool) {
  prepare(kind, start_pos, tokens);
  bind();
  return run(pool);
}

Status IOManager::feed(int64_t start_pos, std::span<const int64_t> tokens, ThreadPool* pool) {
  try {
    for (const Step& s : plan(start_pos, tokens.size())) {
      Status st = step(s.kind, s.start_pos, tokens.subspan(s.begin, s.count), pool);
      if (!st.ok()) return st;
    }
  } catch (const Error& e) {
    return Status::error(e.what());
  }
  return {};
}

Status IOManager::verify(int64_t, std::span<const int64_t>, ThreadPool*) {
  fail("this I/O manager cannot verify drafted tokens in one step");
}

void IOManager::set_all_logits(bool all) {
  if (all) fail("this I/O manager cannot keep the logits of every row of a step");
}

std::span<const float> IOManager::row_logits(int64_t) const {
  fail("this I/O manager keeps the logits of a step's last row only (logits())");
}

IOManagerRegistry& IOManagerRegistry::instance() {
  static IOManagerRegistry registry = [] {
    IOManagerRegistry r;
    register_builtin_contracts(r);
    return r;
  }();
  return registry;
}

void IOManagerRegistry::add(IOContract contract) {
  for (const auto& c : contracts_)
    if (c.name == contract.name && c.version == contract.version)
      fail("I/O contract '", contract.name, "' version ", contract.version, " is already registered");
  contracts_.push_back(std::move(contract));
}

std::vector<std::string> IOManagerRegistry::supported() const {
  std::vector<std::string> out;
  for (const auto& c : contracts_) out.push_back(cat(c.name, " v", c.version));
  return out;
}

const IOContract* IOManagerRegistry::find(const Program& program, std::string* problem) const {
  namespace keys = hf_static::keys;
  const nlohmann::json& m = program.metadata();
  std::string list;
  for (const auto& s : supported()) list += (list.empty() ? "" : ", ") + s;
  auto contract = m.find(keys::io_contract);
  if (contract == m.end() || !contract->is_string()) {
    *problem = cat("metadata key '", keys::io_contract, "' is missing or not a string (supported: ", list, ")");
    return nullptr;
  }
  auto version = m.find(keys::version);
  if (version == m.end() || !version->is_number_integer()) {
    *problem = cat("metadata key '", keys::version, "' is missing or not an integer (supported: ", list, ")");
    return nullptr;
  }
  for (const auto& c : contracts_)
    if (c.name == contract->get<std::string>() && c.version == version->get<int64_t>()) return &c;
  *problem = cat("I/O contract '", contract->get<std::string>(), "' version ", version->dump(),
                 " is not supported (supported: ", list, ")");
  return nullptr;
}

std::unique_ptr<IOManager> IOManagerRegistry::load(std::shared_ptr<const Program> program, BufferAllocator& allocator,
                                                   const RuntimeOptions& runtime) const {
  std::string problem;
  const IOContract* contract = find(*program, &problem);
  if (!contract) fail(program->path(), ": ", problem);
  auto io = contract->create();
  io->load(std::move(program), allocator, runtime);
  return io;
}

std::vector<std::string> IOManagerRegistry::validate(const Program& program) const {
  std::string problem;
  const IOContract* contract = find(program, &problem);
  if (!contract) return {problem};
  return contract->violations(program);
}

std::string IOManagerRegistry::describe(const Program& program) const {
  std::string problem;
  const IOContract* contract = find(program, &problem);
  if (!contract) fail(program.path(), ": ", problem);
  return cat(contract->name, " v", contract->version, " program (", contract->summary(program), ")");
}

}  // namespace hfstatic
