// hfstatic inspect: metadata, methods, signatures and sizes of a program file.
#include <cstdio>

#include "cli/args.h"
#include "cli/runtime_env.h"
#include "executor/method.h"
#include "format/program.h"

namespace hfstatic::cli {
namespace {

std::string human_bytes(uint64_t b) {
  char buf[64];
  if (b >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", double(b) / (1ull << 30));
  else if (b >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.2f MiB", double(b) / (1ull << 20));
  else if (b >= (1ull << 10))
    std::snprintf(buf, sizeof buf, "%.2f KiB", double(b) / (1ull << 10));
  else
    std::snprintf(buf, sizeof buf, "%llu B", (unsigned long long)b);
  return buf;
}

uint64_t value_bytes(const ValueSpec& v) { return uint64_t(*shape_numel(v.shape)) * dtype_size(v.dtype); }

int run_inspect(const std::vector<std::string>& argv) {
  Args args(argv, {}, {});
  args.expect_positional(1, "FILE (a program file)");
  const RuntimeOptions runtime = runtime_options_from_env();
  auto program = Program::load(args.positional()[0], runtime.huge_pages ? PagePolicy::HugePages : PagePolicy::Plain);
  std::printf("program %s (%s)\n", program->path().c_str(), human_bytes(program->file_size()).c_str());
  std::printf("metadata:\n");
  for (auto it = program->metadata().begin(); it != program->metadata().end(); ++it)
    std::printf("  %-18s %s\n", it.key().c_str(), it.value().dump().c_str());
  size_t weights = 0;
  for (const auto& t : program->container().tensors()) weights += t.name.rfind(kEmbeddedFilePrefix, 0) != 0;
  std::printf("weights: %zu tensors, %s\n", weights, human_bytes(program->weight_bytes()).c_str());
  for (const auto& t : program->container().tensors())
    if (t.name.rfind(kEmbeddedFilePrefix, 0) == 0)
      std::printf("embedded file: %s (%s)\n", t.name.substr(std::string(kEmbeddedFilePrefix).size()).c_str(),
                  human_bytes(t.size).c_str());
  for (const auto& m : program->spec().methods) {
    std::string arena = "invalid graph";
    try {
      arena = human_bytes(Method::load(program, m.name, runtime)->arena_bytes());
    } catch (const std::exception& e) {
      arena = std::string("invalid graph: ") + e.what();
    }
    std::printf("method %s: %zu inputs, %zu outputs, %zu nodes, arena %s\n", m.name.c_str(), m.inputs.size(),
                m.outputs.size(), m.nodes.size(), arena.c_str());
    for (size_t i = 0; i < m.inputs.size(); ++i)
      std::printf("  input  %3zu %-22s %-8s %-22s %s\n", i, m.inputs[i].name.c_str(), dtype_name(m.inputs[i].dtype),
                  shape_str(m.inputs[i].shape).c_str(), human_bytes(value_bytes(m.inputs[i])).c_str());
    for (size_t i = 0; i < m.outputs.size(); ++i) {
      const ValueSpec* v = m.output_value(i);
      std::printf("  output %3zu %-22s %-8s %-22s %-10s %s\n", i, m.outputs[i].name.c_str(),
                  v ? dtype_name(v->dtype) : "?", v ? shape_str(v->shape).c_str() : "?",
                  output_memory_name(m.outputs[i].memory),
                  m.outputs[i].memory == OutputMemory::Alias ? ("-> " + m.outputs[i].value).c_str() : "");
    }
  }
  return kExitOk;
}

}  // namespace

HFSTATIC_COMMAND("inspect", "print a program's metadata, methods, signatures and sizes", "FILE", run_inspect);

}  // namespace hfstatic::cli
