// Quantized programs against the NumPy reference run on the same quantized-then-dequantized
// weights (hf_reference.py --quantize): the executor must compute exactly the model the file
// stores, so logits agree to float32 accuracy and greedy tokens are equal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "export/quantize.h"
#include "io/hf_static_io_manager.h"
#include "kernels/isa.h"
#include "test_support.h"

namespace hfstatic {
namespace {

struct QuantCase {
  std::string preset;
  DType dtype;  // I8 or I4
  int64_t group;
  // Of the SIMD kernels' logits. Mixture of experts: a token whose router scores nearly tie may
  // choose another expert once activations are rounded to int8, which moves its logits further.
  double simd_tolerance = 0.1;
};

void PrintTo(const QuantCase& c, std::ostream* os) { *os << c.preset << " " << dtype_name(c.dtype) << " g" << c.group; }

std::string case_name(const testing::TestParamInfo<QuantCase>& info) {
  std::string n = cat(info.param.preset, "_", dtype_name(info.param.dtype), "_g", info.param.group);
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

class QuantParity : public testing::TestWithParam<QuantCase> {};

// Feeds the prompt, then the reference's greedy tokens, comparing every logits row with the
// reference's. exact: the logits agree to float32 accuracy and the argmax of each decode step
// is the reference's token. Otherwise (SIMD kernels that round activations to int8) the logits
// agree within `tolerance` and an argmax other than the reference's token is one whose
// reference logit is within twice that of the token's: a near tie.
void check_against_reference(const std::shared_ptr<const Program>& program, const nlohmann::json& ref,
                             const std::vector<int64_t>& prompt, kernels::Isa isa, double tolerance, bool exact) {
  RuntimeOptions runtime;
  runtime.isa = isa;
  auto io = IOManagerRegistry::instance().load(program, HeapAllocator::instance(), runtime);
  auto& hf = dynamic_cast<HfStaticIOManager&>(*io);
  hf.set_all_logits(true);
  const int64_t V = io->model().vocab_size;
  for (const Step& s : io->plan(0, prompt.size())) {
    ASSERT_TRUE(io->step(s.kind, s.start_pos, std::span(prompt).subspan(s.begin, s.count), nullptr).ok());
    const float* all = static_cast<const float*>(hf.execution(StepKind::Prefill).output_data(3 * io->model().n_layers));
    for (size_t r = 0; r < s.count; ++r) {
      std::vector<float> got(all + r * V, all + (r + 1) * V);
      auto want = ref["prompt_logits"][s.begin + r].get<std::vector<double>>();
      EXPECT_LE(test::relative_error(got, want), tolerance) << "prompt position " << s.begin + r;
    }
  }
  const auto tokens = ref["greedy_tokens"].get<std::vector<int64_t>>();
  int64_t pos = int64_t(prompt.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::span<const float> logits = io->logits();
    std::vector<float> got(logits.begin(), logits.end());
    auto want = ref["greedy_logits"][i].get<std::vector<double>>();
    EXPECT_LE(test::relative_error(got, want), tolerance) << "greedy step " << i;
    const int64_t mine = std::max_element(got.begin(), got.end()) - got.begin();
    double scale = 0;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    const double margin = want[size_t(tokens[i])] - want[size_t(mine)];
    if (exact)
      EXPECT_EQ(mine, tokens[i]) << "greedy step " << i;
    else
      EXPECT_LE(margin, 2 * tolerance * scale) << "greedy step " << i << ": " << mine << " instead of " << tokens[i];
    std::vector<int64_t> one = {tokens[i]};
    ASSERT_TRUE(io->step(StepKind::Decode, pos++, one, nullptr).ok());
  }
}

TEST_P(QuantParity, LogitsAndGreedyTokensMatchTheDequantizedReference) {
  const QuantCase& c = GetParam();
  const std::string ckpt = test::cached_checkpoint(c.preset, 7);
  test::TempDir dir("quant-parity");
  ExportOptions o;
  o.graph.prefill_len = 8;
  o.graph.max_context = 64;
  o.quant = WeightQuant{c.dtype, c.group};
  export_program(ckpt, dir.file("q.hfs"), o);
  auto program = Program::load(dir.file("q.hfs"));
  EXPECT_EQ(program->spec().format_version, 3);
  // 11 prompt tokens: one full prefill chunk, then a padded chunk of 3.
  const std::vector<int64_t> prompt = {256, 72, 101, 108, 108, 111, 44, 32, 119, 111, 114};
  const nlohmann::json ref =
      test::reference(ckpt, prompt, 24, "float32", {"--quantize", dtype_name(c.dtype), "--group-size", cat(c.group)});
  {
    SCOPED_TRACE("scalar kernels");
    check_against_reference(program, ref, prompt, kernels::Isa::Scalar, 1e-4, /*exact=*/true);
  }
  SCOPED_TRACE(kernels::isa_name(kernels::best_isa()));
  check_against_reference(program, ref, prompt, kernels::best_isa(), c.simd_tolerance, /*exact=*/false);
}

// The float reference and the quantized one differ: the comparison above could fail.
TEST(QuantParityReference, QuantizedReferenceDiffersFromTheFloatOne) {
  const std::string ckpt = test::cached_checkpoint("tiny", 7);
  const std::vector<int64_t> prompt = {256, 72, 101};
  auto plain = test::reference(ckpt, prompt, 0)["prompt_logits"][2].get<std::vector<double>>();
  auto q4 = test::reference(ckpt, prompt, 0, "float32", {"--quantize", "int4"})["prompt_logits"][2];
  std::vector<float> q4f;
  for (double v : q4) q4f.push_back(float(v));
  EXPECT_GT(test::relative_error(q4f, plain), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(
    Presets, QuantParity,
    testing::Values(QuantCase{"tiny", DType::I8, 32}, QuantCase{"tiny", DType::I4, 32},
                    QuantCase{"tiny-llama3", DType::I8, 64}, QuantCase{"tiny-llama3", DType::I4, 64},
                    QuantCase{"tiny-mistral", DType::I4, 32}, QuantCase{"tiny-qwen2", DType::I8, 32},
                    QuantCase{"tiny-qwen2", DType::I4, 32}, QuantCase{"tiny-qwen3", DType::I4, 32},
                    // hf_static v2: sliding layers, gemma3's float32 (1 + w) norms
                    QuantCase{"tiny-mistral-sw", DType::I8, 32}, QuantCase{"tiny-gemma3", DType::I4, 32},
                    // rows of whole blocks of 8 groups, then 1 or 2 groups (512 and 576 wide)
                    QuantCase{"tiny-wide", DType::I8, 32}, QuantCase{"tiny-wide", DType::I4, 32},
                    QuantCase{"tiny-wide", DType::I4, 64},
                    // experts quantized, routers float
                    QuantCase{"tiny-mixtral", DType::I4, 32, 0.4}, QuantCase{"tiny-qwen2-moe", DType::I8, 32, 0.4},
                    QuantCase{"tiny-qwen3-moe", DType::I4, 32, 0.4}, QuantCase{"tiny-olmoe", DType::I8, 32, 0.4}),
    case_name);

}  // namespace
}  // namespace hfstatic
