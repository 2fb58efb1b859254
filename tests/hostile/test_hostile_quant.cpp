// Hostile quantized programs: a real int4 export with one thing broken (scales missing, short,
// mistyped, of another group size; values not packed; quantized weights in a version-1 file)
// is refused when loaded, before any step, with an error naming the program and the tensor.
// Quantized programs with each tensor moved to the end of a page-aligned file run on every ISA
// (a kernel that reads past a tensor would fault at the end of the mapping).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "export/exporter.h"
#include "format/program.h"
#include "hostile_support.h"
#include "io/io_manager.h"
#include "program_file_edit.h"
#include "runner/runner.h"
#include "test_support.h"
#include "util/mapped_file.h"

namespace hfstatic {
namespace {

using hostile::error_of;
using testing::HasSubstr;

struct TensorCopy {
  DType dtype;
  Shape shape;
  std::vector<uint8_t> bytes;
};

class HostileQuant : public testing::Test {
 protected:
  test::TempDir dir{"hostile-quant"};

  // tiny exported as int4 in groups of 32, once per test binary.
  static const std::string& program_path() {
    static test::TempDir keep("hostile-quant-program");
    static const std::string path = [] {
      ExportOptions o;
      o.graph.prefill_len = 4;
      o.graph.max_context = 16;
      o.quant = WeightQuant{DType::I4, 32};
      export_program(test::cached_checkpoint("tiny", 1), keep.file("q4.hfs"), o);
      return keep.file("q4.hfs");
    }();
    return path;
  }

  // The int4 program rewritten with its spec and tensors edited; returns the error of loading
  // it as run and serve do.
  std::string load_error(const std::function<void(ProgramSpec&, std::map<std::string, TensorCopy>&)>& edit) {
    auto original = Program::load(program_path());
    ProgramSpec spec = original->spec();
    std::map<std::string, TensorCopy> tensors;
    for (const TensorInfo& t : original->container().tensors()) {
      const uint8_t* data = original->container().tensor_data(t);
      tensors[t.name] = {t.dtype, t.shape, std::vector<uint8_t>(data, data + t.size)};
    }
    edit(spec, tensors);
    ProgramWriter writer(spec);
    for (auto& [name, t] : tensors) {
      if (name.rfind(kEmbeddedFilePrefix, 0) == 0)
        writer.add_file(name.substr(std::string(kEmbeddedFilePrefix).size()),
                        std::string(t.bytes.begin(), t.bytes.end()));
      else
        writer.add_weight_bytes(name, t.dtype, t.shape, t.bytes);
    }
    const std::string path = dir.file("broken.hfs");
    writer.write(path);
    return error_of([&] { IOManagerRegistry::instance().load(Program::load(path)); });
  }
  static void resize(TensorCopy& t, DType dtype, Shape shape) {
    t = {dtype, shape, std::vector<uint8_t>(size_t(*shape_numel(shape)) * dtype_size(dtype))};
  }
};

const std::string kDown = "model.layers.1.mlp.down_proj.weight";

TEST_F(HostileQuant, TheUneditedProgramLoads) {
  EXPECT_NO_THROW(IOManagerRegistry::instance().load(Program::load(program_path())));
}

TEST_F(HostileQuant, MissingScales) {
  EXPECT_THAT(load_error([](ProgramSpec&, auto& t) { t.erase(kDown + ".scales"); }),
              HasSubstr("broken.hfs: method 'prefill' node 31 (linear): operand "
                        "'model.layers.1.mlp.down_proj.weight.scales' is not an input, a weight or a declared value"));
}

TEST_F(HostileQuant, ShortScales) {
  EXPECT_THAT(load_error([](ProgramSpec&, auto& t) {
                resize(t[kDown + ".scales"], DType::F16, {64, 4});
              }),
              HasSubstr("broken.hfs: method 'prefill' node 31 (linear): input 2 "
                        "'model.layers.1.mlp.down_proj.weight.scales' (float16 [64, 4]) must be the float16 scales of "
                        "'model.layers.1.mlp.down_proj.weight': float16 [64, 5]"));
}

TEST_F(HostileQuant, MistypedScales) {
  EXPECT_THAT(load_error([](ProgramSpec&, auto& t) {
                resize(t[kDown + ".scales"], DType::BF16, {64, 5});
              }),
              HasSubstr("'model.layers.1.mlp.down_proj.weight.scales' (bfloat16 [64, 5]) must be the float16 scales "
                        "of 'model.layers.1.mlp.down_proj.weight': float16 [64, 5]"));
}

TEST_F(HostileQuant, ScalesOfAnotherGroupSize) {
  // The attribute says 64 while the scales are those of groups of 32; 64 does not divide 160.
  EXPECT_THAT(load_error([](ProgramSpec& s, auto&) {
                for (auto& n : s.methods[0].nodes)
                  if (n.inputs.size() > 1 && n.inputs[1] == "model.layers.0.self_attn.q_proj.weight")
                    n.attrs["group_size"] = 64;
              }),
              HasSubstr("'model.layers.0.self_attn.q_proj.weight.scales' (float16 [64, 2]) must be the float16 scales "
                        "of 'model.layers.0.self_attn.q_proj.weight': float16 [64, 1]"));
  EXPECT_THAT(load_error([](ProgramSpec& s, auto&) {
                for (auto& n : s.methods[0].nodes)
                  if (n.inputs.size() > 1 && n.inputs[1] == kDown) n.attrs["group_size"] = 64;
              }),
              HasSubstr("attribute 'group_size' = 64 does not divide the 160 input features of input 1 "
                        "'model.layers.1.mlp.down_proj.weight' (uint8 [64, 80])"));
}

TEST_F(HostileQuant, PackedSizeMismatch) {
  EXPECT_THAT(load_error([](ProgramSpec&, auto& t) {
                resize(t[kDown], DType::U8, {64, 160});
              }),
              HasSubstr("input 1 'model.layers.1.mlp.down_proj.weight' (uint8 [64, 160]) must be uint8 [64, 80] (160 "
                        "input features, two a byte) to match input 0 'l1.act' (float32 [1, 4, 160])"));
  EXPECT_THAT(load_error([](ProgramSpec&, auto& t) {
                resize(t[kDown], DType::I8, {64, 160});
              }),
              HasSubstr("input 1 'model.layers.1.mlp.down_proj.weight' (int8 [64, 160]) must be uint8 to hold int4 "
                        "values"));
}

TEST_F(HostileQuant, QuantizedWeightsInAVersionOneFile) {
  std::vector<uint8_t> bytes = [] {
    const std::string text = read_text_file(program_path());
    return std::vector<uint8_t>(text.begin(), text.end());
  }();
  const std::string from = "\\\"format_version\\\":3", to = "\\\"format_version\\\":1";
  auto at = std::search(bytes.begin(), bytes.end(), from.begin(), from.end());
  ASSERT_NE(at, bytes.end());
  std::copy(to.begin(), to.end(), at);
  const std::string path = dir.file("v1.hfs");
  hostile::write_bytes(path, bytes);
  EXPECT_THAT(error_of([&] { Program::load(path); }),
              HasSubstr("v1.hfs: program spec: format_version 1 cannot hold quantized weights (a node has attribute "
                        "'weight_dtype'); quantized programs are format_version 3"));
}

class QuantTensorAtTheEnd : public testing::TestWithParam<std::tuple<const char*, DType, int64_t>> {};

TEST_P(QuantTensorAtTheEnd, EveryTensorAtTheEndOfAPageAlignedFileRuns) {
  const auto [preset, dtype, group] = GetParam();
  test::TempDir dir("quant-at-end");
  ExportOptions o;
  o.graph.prefill_len = 4;
  o.graph.max_context = 16;
  o.quant = WeightQuant{dtype, group};
  const std::string original = dir.file("q.hfs");
  export_program(test::cached_checkpoint(preset, 1), original, o);
  std::vector<std::string> names;
  const auto program = Program::load(original);
  for (const TensorInfo& t : program->container().tensors()) names.push_back(t.name);
  ASSERT_GT(names.size(), 10u);
  // Prefill steps for the prompt, decode steps for the tokens after it (no prefill fits there).
  const std::vector<int64_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
  for (const std::string& name : names) {
    const std::string moved = dir.file("moved.hfs");
    fuzz::ProgramFile file(read_text_file(original));
    file.move_to_page_end(name);
    const std::string bytes = file.bytes();
    ASSERT_EQ(bytes.size() % fuzz::ProgramFile::kPage, 0u);
    hostile::write_bytes(moved, std::vector<uint8_t>(bytes.begin(), bytes.end()));
    for (kernels::Isa isa : {kernels::Isa::Scalar, kernels::Isa::Avx2, kernels::Isa::Avx512}) {
      if (!kernels::isa_supported(isa)) continue;
      RunnerOptions options;
      options.threads = 1;
      options.runtime.isa = isa;
      options.runtime.huge_pages = false;  // the file's own mapping, which ends with the tensor
      GenerationConfig greedy;
      greedy.max_new_tokens = 2;
      greedy.sampling.temperature = 0;
      std::vector<int64_t> tokens;
      ASSERT_NO_THROW(tokens = Runner::load(moved, options)->generate_tokens(prompt, greedy).tokens)
          << name << " on " << kernels::isa_name(isa);
      EXPECT_EQ(tokens.size(), 2u) << name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Programs, QuantTensorAtTheEnd,
                         testing::Values(std::make_tuple("tiny-wide", DType::I8, int64_t(32)),
                                         std::make_tuple("tiny-wide", DType::I4, int64_t(64))));

// One group as wide as the row (and other multiples of 32 no kernel implements): refused when
// loaded, naming the program, the node and the sizes allowed.
TEST_F(HostileQuant, AGroupSizeNoKernelImplements) {
  for (int group : {96, 160}) {
    EXPECT_THAT(load_error([group](ProgramSpec& s, auto& t) {
                  for (auto& n : s.methods[0].nodes)
                    if (n.inputs.size() > 1 && n.inputs[1] == kDown) n.attrs["group_size"] = group;
                  resize(t[kDown + ".scales"], DType::F16, {64, 160 / group});
                }),
                HasSubstr("broken.hfs: method 'prefill' node 31 (linear): attribute 'group_size' = " +
                          std::to_string(group) + " is not a group size the kernels implement (32, 64 or 128)"));
  }
}

}  // namespace
}  // namespace hfstatic
