// The executor's prefill and decode logits against the independent NumPy implementation of
// the Hugging Face forward pass, for the tiny preset of each model family.
#include <gtest/gtest.h>

#include <algorithm>

#include "io/hf_static_io_manager.h"
#include "test_support.h"

namespace hfstatic {
namespace {

struct ParityCase {
  std::string preset;
  DType cache;
  double tolerance;
  int64_t version = 1;  // the contract version it exports to (2: windows shorter than the context)
};

void PrintTo(const ParityCase& c, std::ostream* os) { *os << c.preset << " cache " << dtype_name(c.cache); }

std::string case_name(const testing::TestParamInfo<ParityCase>& info) {
  std::string n = info.param.preset + "_" + dtype_name(info.param.cache);
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

class ReferenceParity : public testing::TestWithParam<ParityCase> {};

TEST_P(ReferenceParity, PrefillAndDecodeLogitsAndGreedyTokensMatch) {
  const ParityCase& c = GetParam();
  const std::string ckpt = test::cached_checkpoint(c.preset, 7);
  test::TempDir dir("parity");
  GraphOptions g;
  g.prefill_len = 8;
  g.max_context = 64;
  g.cache_dtype = c.cache;
  g.repeat_state = true;
  auto program = Program::load(test::export_to(ckpt, dir.file("p.hfs"), g));
  ASSERT_EQ(program->metadata()["version"], c.version);
  auto io = IOManagerRegistry::instance().load(program);
  auto& hf = dynamic_cast<HfStaticIOManager&>(*io);
  hf.set_all_logits(true);  // every prompt row is scored

  // 11 prompt tokens: one full prefill chunk, then a padded chunk of 3; with the 32 greedy steps
  // the sequence passes the sliding windows (5 and 6 positions) of the *-sw and gemma presets.
  const std::vector<int64_t> prompt = {256, 72, 101, 108, 108, 111, 44, 32, 119, 111, 114};
  const int steps = 32;
  // The reference computes rope for the program's context (tiny-phi3-long: longrope's long factors).
  nlohmann::json ref =
      test::reference(ckpt, prompt, steps, dtype_name(c.cache), {"--max-context", std::to_string(g.max_context)});
  const int64_t V = io->model().vocab_size;

  // Prompt logits, every real row of every prefill chunk.
  for (const Step& s : io->plan(0, prompt.size())) {
    ASSERT_EQ(s.kind, StepKind::Prefill);
    ASSERT_TRUE(io->step(s.kind, s.start_pos, std::span(prompt).subspan(s.begin, s.count), nullptr).ok());
    const float* all = static_cast<const float*>(hf.execution(StepKind::Prefill).output_data(3 * io->model().n_layers));
    for (size_t r = 0; r < s.count; ++r) {
      std::vector<float> got(all + r * V, all + (r + 1) * V);
      auto want = ref["prompt_logits"][s.begin + r].get<std::vector<double>>();
      EXPECT_LE(test::relative_error(got, want), c.tolerance) << "prompt position " << s.begin + r;
    }
  }
  // Greedy decoding through decode, one token per step.
  int64_t pos = int64_t(prompt.size());
  std::vector<int64_t> tokens;
  for (int i = 0; i < steps; ++i) {
    std::span<const float> logits = io->logits();
    std::vector<float> got(logits.begin(), logits.end());
    auto want = ref["greedy_logits"][i].get<std::vector<double>>();
    EXPECT_LE(test::relative_error(got, want), c.tolerance) << "greedy step " << i;
    int64_t next = std::max_element(got.begin(), got.end()) - got.begin();
    tokens.push_back(next);
    std::vector<int64_t> one = {next};
    ASSERT_TRUE(io->step(StepKind::Decode, pos++, one, nullptr).ok());
  }
  EXPECT_EQ(tokens, ref["greedy_tokens"].get<std::vector<int64_t>>());
}

INSTANTIATE_TEST_SUITE_P(
    AllFamilies, ReferenceParity,
    testing::Values(ParityCase{"tiny", DType::F32, 1e-4}, ParityCase{"tiny", DType::F16, 2e-2},
                    ParityCase{"tiny-llama3", DType::F32, 1e-4}, ParityCase{"tiny-llama3", DType::F16, 2e-2},
                    ParityCase{"tiny-mistral", DType::F32, 1e-4}, ParityCase{"tiny-mistral", DType::F16, 2e-2},
                    ParityCase{"tiny-qwen2", DType::F32, 1e-4}, ParityCase{"tiny-qwen2", DType::F16, 2e-2},
                    ParityCase{"tiny-qwen3", DType::F32, 1e-4}, ParityCase{"tiny-qwen3", DType::F16, 2e-2},
                    ParityCase{"tiny-phi3", DType::F32, 1e-4}, ParityCase{"tiny-phi3", DType::F16, 2e-2},
                    ParityCase{"tiny-smollm3", DType::F32, 1e-4}, ParityCase{"tiny-smollm3", DType::F16, 2e-2},
                    ParityCase{"tiny-granite", DType::F32, 1e-4}, ParityCase{"tiny-granite", DType::F16, 2e-2},
                    ParityCase{"tiny-yarn", DType::F32, 1e-4}, ParityCase{"tiny-yarn", DType::F16, 2e-2},
                    ParityCase{"tiny-mistral-sw", DType::F32, 1e-4, 2},
                    ParityCase{"tiny-mistral-sw", DType::F16, 2e-2, 2},
                    ParityCase{"tiny-qwen2-sw", DType::F32, 1e-4, 2}, ParityCase{"tiny-qwen2-sw", DType::F16, 2e-2, 2},
                    ParityCase{"tiny-gemma3", DType::F32, 1e-4, 2}, ParityCase{"tiny-gemma3", DType::F16, 2e-2, 2},
                    ParityCase{"tiny-gemma2", DType::F32, 1e-4, 2}, ParityCase{"tiny-gemma2", DType::F16, 2e-2, 2},
                    ParityCase{"tiny-gemma3-mm", DType::F32, 1e-4, 2},
                    ParityCase{"tiny-gemma3-mm", DType::F16, 2e-2, 2}, ParityCase{"tiny-phi3-long", DType::F32, 1e-4},
                    ParityCase{"tiny-phi3-long", DType::F16, 2e-2}, ParityCase{"tiny-phi3-sw", DType::F32, 1e-4, 2},
                    ParityCase{"tiny-phi3-sw", DType::F16, 2e-2, 2}, ParityCase{"tiny-smollm3-sw", DType::F32, 1e-4, 2},
                    ParityCase{"tiny-smollm3-sw", DType::F16, 2e-2, 2}, ParityCase{"tiny-mixtral", DType::F32, 1e-4},
                    ParityCase{"tiny-mixtral", DType::F16, 2e-2}, ParityCase{"tiny-qwen2-moe", DType::F32, 1e-4},
                    ParityCase{"tiny-qwen2-moe", DType::F16, 2e-2}, ParityCase{"tiny-qwen3-moe", DType::F32, 1e-4},
                    ParityCase{"tiny-qwen3-moe", DType::F16, 2e-2}, ParityCase{"tiny-olmoe", DType::F32, 1e-4},
                    ParityCase{"tiny-olmoe", DType::F16, 2e-2}),
    case_name);

}  // namespace
}  // namespace hfstatic
