// Weights that are well-formed but hold NaN, infinity or zero scales: `validate --check-weights`
// (and check_weights) names the tensor and the first bad index, and a generation whose logits
// turn NaN stops with an error naming the token and the position instead of printing padding.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <optional>

#include "export/exporter.h"
#include "format/program.h"
#include "format/weight_check.h"
#include "runner/runner.h"
#include "test_support.h"

namespace hfstatic {
namespace {

using testing::AllOf;
using testing::HasSubstr;

constexpr uint16_t kF16Nan = 0x7e00, kF16Inf = 0x7c00, kF16Zero = 0;
const std::string kDown = "model.layers.1.mlp.down_proj.weight";

class HostileWeights : public testing::Test {
 protected:
  test::TempDir dir{"hostile-weights"};

  // tiny exported to dir/name: int4 in groups of 32, or float16 weights without quant.
  std::string export_tiny(const std::string& name, std::optional<WeightQuant> quant) {
    ExportOptions o;
    o.graph.prefill_len = 4;
    o.graph.max_context = 16;
    o.weights_dtype = DType::F16;
    o.quant = quant;
    const std::string path = dir.file(name);
    export_program(test::cached_checkpoint("tiny", 1), path, o);
    return path;
  }

  // Overwrites element `index` of the 2-byte tensor `tensor` of the program file with `bits`.
  static void poke(const std::string& path, const std::string& tensor, int64_t index, uint16_t bits) {
    size_t offset = 0;
    {
      auto program = Program::load(path);
      const TensorInfo* t = program->container().find(tensor);
      ASSERT_NE(t, nullptr) << tensor;
      ASSERT_EQ(dtype_size(t->dtype), 2u) << tensor;
      offset = size_t(program->container().tensor_data(*t) - program->file_data()) + size_t(index) * 2;
    }
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(offset));
    f.write(reinterpret_cast<const char*>(&bits), 2);
    ASSERT_TRUE(f.good());
  }
};

TEST_F(HostileWeights, AnExportedProgramHoldsNothingToReport) {
  for (auto quant : {std::optional<WeightQuant>(), std::optional<WeightQuant>(WeightQuant{DType::I4, 32})}) {
    const WeightCheck check = check_weights(*Program::load(export_tiny("clean.hfs", quant)));
    EXPECT_TRUE(check.problems.empty()) << check.problems.front();
    EXPECT_TRUE(check.notes.empty());
    EXPECT_GT(check.tensors, 10u);
    EXPECT_GT(check.bytes, 4000u);
  }
}

TEST_F(HostileWeights, NanScalesAreNamedWithTheirWeightAndFirstIndex) {
  const std::string path = export_tiny("nan-scales.hfs", WeightQuant{DType::I4, 32});
  poke(path, kDown + ".scales", 9, kF16Nan);
  poke(path, kDown + ".scales", 5, kF16Nan);
  const WeightCheck check = check_weights(*Program::load(path));
  ASSERT_EQ(check.problems.size(), 1u);
  EXPECT_THAT(check.problems[0],
              AllOf(HasSubstr("tensor '" + kDown + ".scales' (float16 [64, 5])"),
                    HasSubstr("the scales of '" + kDown + "'"), HasSubstr("2 NaNs, the first at index 5 [1, 0]")));
}

TEST_F(HostileWeights, InfiniteFloatWeightsAreNamed) {
  const std::string path = export_tiny("inf.hfs", std::nullopt);
  poke(path, "lm_head.weight", 70, kF16Inf);
  const WeightCheck check = check_weights(*Program::load(path));
  ASSERT_EQ(check.problems.size(), 1u);
  EXPECT_THAT(check.problems[0], AllOf(HasSubstr("tensor 'lm_head.weight' (float16 [272, 64])"),
                                       HasSubstr("1 infinite value, the first at index 70 [1, 6]")));
}

TEST_F(HostileWeights, ZeroScalesAreNotesNotProblems) {
  const std::string path = export_tiny("zero-scale.hfs", WeightQuant{DType::I4, 32});
  poke(path, kDown + ".scales", 3, kF16Zero);
  const WeightCheck check = check_weights(*Program::load(path));
  EXPECT_TRUE(check.problems.empty());
  ASSERT_EQ(check.notes.size(), 1u);
  EXPECT_THAT(check.notes[0], HasSubstr("1 zero scale (groups whose weights all read as 0), the first at index 3"));
}

// One NaN scale of a down projection makes one feature of the hidden state NaN, the final norm
// every one, and so every logit: the generation stops at its first token, naming it.
TEST_F(HostileWeights, NanLogitsStopTheGenerationNamingThePosition) {
  const std::string path = export_tiny("nan-logits.hfs", WeightQuant{DType::I4, 32});
  poke(path, kDown + ".scales", 0, kF16Nan);
  RunnerOptions one_thread;
  one_thread.threads = 1;
  auto runner = Runner::load(path, one_thread);
  GenerationConfig config;
  config.max_new_tokens = 4;
  const std::vector<int64_t> prompt = {5, 6, 7};
  EXPECT_THAT(test::error_of([&] { runner->generate_tokens(prompt, config); }),
              AllOf(HasSubstr(path + ": the logits of generated token 0 (predicting position 3) are NaN in 272 of 272"),
                    HasSubstr("hfstatic validate --check-weights " + path)));
}

TEST_F(HostileWeights, ValidateCheckWeightsExitsWithTheTensorNamed) {
  const std::string path = export_tiny("cli.hfs", WeightQuant{DType::I4, 32});
  auto r = test::run_cli({"validate", "--check-weights", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("hold no NaN or infinity"));
  poke(path, kDown + ".scales", 7, kF16Inf);
  EXPECT_EQ(test::run_cli({"validate", path}).exit_code, 0);  // the values are not looked at without the flag
  r = test::run_cli({"validate", "--check-weights", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(path + ": tensor '" + kDown + ".scales'"));
  EXPECT_THAT(r.err, HasSubstr("1 infinite value, the first at index 7 [1, 2]"));
  r = test::run_cli({"run", "-m", path, "-p", "Hello", "-n", "4"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("are NaN in"));
}

}  // namespace
}  // namespace hfstatic
