// hfstatic inspect: metadata, methods, signatures and sizes of a program file; with --plan, the
// kernel variant and scratch of each step of each method on this host.
#include <cstdio>
#include <map>

#include "cli/args.h"
#include "cli/runtime_flags.h"
#include "executor/method.h"
#include "format/program.h"
#include "util/error.h"

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

// The weight tensors: each with the dtype and shape it holds (a quantized weight's logical
// ones, its group size, and the scales tensor it is read with), then the bytes of each dtype.
void print_weights(const Program& program) {
  std::map<std::string, QuantizedOperand> quantized;
  std::map<std::string, std::string> scales_of;
  for (const auto& m : program.spec().methods)
    for (const auto& node : m.nodes)
      for (const QuantizedOperand& q : quantized_operands(node)) {
        quantized.emplace(q.weight, q);
        scales_of.emplace(q.scales, q.weight);
      }
  std::map<std::string, uint64_t> bytes_by_dtype;
  size_t count = 0;
  for (const auto& t : program.container().tensors()) {
    if (t.name.rfind(kEmbeddedFilePrefix, 0) == 0) continue;
    ++count;
    std::string dtype = dtype_name(t.dtype), shape = shape_str(t.shape), note;
    if (auto q = quantized.find(t.name); q != quantized.end() && t.shape.size() == 2) {
      const WeightQuant& wq = q->second.quant;
      dtype = dtype_name(wq.dtype);
      shape = shape_str({t.shape[0], wq.dtype == DType::I4 ? t.shape[1] * 2 : t.shape[1]});
      note = cat("group ", wq.group, ", scales ", q->second.scales);
    } else if (auto s = scales_of.find(t.name); s != scales_of.end()) {
      note = "scales of " + s->second;
    }
    bytes_by_dtype[dtype] += t.size;
    std::printf("  tensor %-44s %-8s %-14s %10s  %s\n", t.name.c_str(), dtype.c_str(), shape.c_str(),
                human_bytes(t.size).c_str(), note.c_str());
  }
  std::string by_dtype;
  for (const auto& [dtype, bytes] : bytes_by_dtype)
    by_dtype += cat(by_dtype.empty() ? "" : ", ", dtype, " ", human_bytes(bytes));
  std::printf("weights: %zu tensors, %s (%s)\n", count, human_bytes(program.weight_bytes()).c_str(), by_dtype.c_str());
}

// Each step of a loaded method: its nodes, ops, the kernel variant of the method's rows and of
// few rows (where they differ), and its scratch; then the scratch a run reserves.
void print_plan(const Method& method) {
  std::printf("  kernels %s (cpu: %s), token axis %lld rows\n", kernels::isa_name(method.isa()),
              *kernels::isa_cpu_features() ? kernels::isa_cpu_features() : "no SIMD features",
              (long long)method.rows());
  const auto& plans = method.step_plans();
  for (size_t i = 0; i < plans.size(); ++i) {
    const Method::StepPlan& p = plans[i];
    const std::string nodes =
        p.nodes == 1 ? cat("node ", p.first_node) : cat("nodes ", p.first_node, "-", p.first_node + p.nodes - 1);
    std::string variant = p.variant.empty() ? "-" : p.variant;
    if (p.few_rows != p.variant) variant += cat(" | few rows: ", p.few_rows);
    std::printf("  step %4zu %-13s %-26s %s%s\n", i, nodes.c_str(), p.ops.c_str(), variant.c_str(),
                p.sliceable ? " (wanted rows only)" : "");
    if (p.scratch.bytes(1) > 0) std::printf("            scratch: %s bytes\n", p.scratch.describe().c_str());
  }
  const kernels::ScratchNeed& need = method.scratch();
  std::printf("  scratch a run reserves: %s on the calling thread, %s on each other thread (%s)\n",
              human_bytes(need.bytes(1)).c_str(), human_bytes(need.bytes(2) - need.bytes(1)).c_str(),
              need.describe().c_str());
}

int run_inspect(const std::vector<std::string>& argv) {
  Args args(argv, {}, {"--plan"});
  args.expect_positional(1, "FILE (a program file)");
  const RuntimeOptions runtime = runtime_options_from_env();
  auto program = Program::load(args.positional()[0], runtime.huge_pages ? PagePolicy::HugePages : PagePolicy::Plain);
  std::printf("program %s (%s)\n", program->path().c_str(), human_bytes(program->file_size()).c_str());
  std::printf("metadata:\n");
  for (auto it = program->metadata().begin(); it != program->metadata().end(); ++it)
    std::printf("  %-18s %s\n", it.key().c_str(), it.value().dump().c_str());
  std::printf("format version %d\n", program->spec().format_version);
  print_weights(*program);
  for (const auto& t : program->container().tensors())
    if (t.name.rfind(kEmbeddedFilePrefix, 0) == 0)
      std::printf("embedded file: %s (%s)\n", t.name.substr(std::string(kEmbeddedFilePrefix).size()).c_str(),
                  human_bytes(t.size).c_str());
  for (const auto& m : program->spec().methods) {
    std::string arena = "invalid graph";
    std::shared_ptr<const Method> method;
    try {
      method = Method::load(program, m.name, runtime);
      arena = human_bytes(method->arena_bytes());
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
    if (method && args.has("--plan")) print_plan(*method);
  }
  return kExitOk;
}

}  // namespace

HFSTATIC_COMMAND("inspect",
                 "print a program's metadata, methods, signatures and sizes; --plan: each step's kernel "
                 "variant and scratch on this host (HFSTATIC_ISA caps the ISA)",
                 "[--plan] FILE", run_inspect);

}  // namespace hfstatic::cli
