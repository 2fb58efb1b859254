#include "io/io_manager.h"

#include "io/hf_static_io_manager.h"

namespace hfstatic {

const char* step_kind_name(StepKind k) { return k == StepKind::Prefill ? "prefill" : "decode"; }

Status IOManager::feed(int64_t start_pos, std::span<const int64_t> tokens, ThreadPool* pool) {
  std::vector<Step> steps;
  try {
    steps = plan(start_pos, tokens.size());
    for (const Step& s : steps) {
      prepare(s.kind, s.start_pos, tokens.subspan(s.begin, s.count));
      bind();
      Status st = run(pool);
      if (!st.ok()) return st;
    }
  } catch (const Error& e) {
    return Status::error(e.what());
  }
  return {};
}

IOManagerRegistry::IOManagerRegistry() {
  // Built-in contracts.
  register_hf_static_io_manager(*this);
}

IOManagerRegistry& IOManagerRegistry::instance() {
  static IOManagerRegistry registry;
  return registry;
}

void IOManagerRegistry::add(const std::string& contract, int64_t version, IOManagerFactory factory) {
  for (auto& e : entries_) {
    if (e.contract == contract && e.version == version) {
      e.factory = std::move(factory);
      return;
    }
  }
  entries_.push_back({contract, version, std::move(factory)});
}

std::vector<std::string> IOManagerRegistry::supported() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(cat(e.contract, " v", e.version));
  return out;
}

std::unique_ptr<IOManager> IOManagerRegistry::load(std::shared_ptr<const Program> program, BufferAllocator& allocator,
                                                   const RuntimeOptions& runtime) const {
  const nlohmann::json& m = program->metadata();
  std::string list;
  for (const auto& s : supported()) list += (list.empty() ? "" : ", ") + s;
  auto contract = m.find("io_contract");
  if (contract == m.end() || !contract->is_string())
    fail(program->path(), ": metadata key 'io_contract' is missing or not a string (supported: ", list, ")");
  auto version = m.find("version");
  if (version == m.end() || !version->is_number_integer())
    fail(program->path(), ": metadata key 'version' is missing or not an integer (supported: ", list, ")");
  for (const auto& e : entries_) {
    if (e.contract == contract->get<std::string>() && e.version == version->get<int64_t>()) {
      auto io = e.factory();
      io->load(std::move(program), allocator, runtime);
      return io;
    }
  }
  fail(program->path(), ": I/O contract '", contract->get<std::string>(), "' version ", version->dump(),
       " is not supported (supported: ", list, ")");
}

}  // namespace hfstatic
