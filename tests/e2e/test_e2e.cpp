// End to end on real text: models/demo, a small Llama trained on the King James Bible by
// tools/train-demo/train.py, exported with float32 and float16 caches. The perplexity of its
// held-out slice, computed from the logits of prefill and decode steps, must match the one PyTorch
// computed at training time (models/demo/heldout_eval.json); the C++ tokenizer must give the
// trainer's token ids; and the default program of `hfstatic run` must print words of the text.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "io/hf_static_io_manager.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"

namespace hfstatic {
namespace {

const std::string kDemo = std::string(HFSTATIC_SOURCE_DIR) + "/models/demo";

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) ADD_FAILURE() << "cannot read " << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<int64_t> heldout_tokens() {
  std::vector<int64_t> ids;
  std::stringstream ss(read_file(kDemo + "/heldout_tokens.txt"));
  for (int64_t id; ss >> id;) ids.push_back(id);
  return ids;
}

nlohmann::json heldout_eval() { return nlohmann::json::parse(read_file(kDemo + "/heldout_eval.json")); }

// -log softmax(logits)[target], in double.
double nll(const float* logits, int64_t vocab, int64_t target) {
  double mx = logits[0];
  for (int64_t i = 1; i < vocab; ++i) mx = std::max(mx, double(logits[i]));
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - mx);
  return std::log(sum) + mx - double(logits[target]);
}

TEST(DemoModel, TokenizerGivesTheTrainersIdsForTheHeldOutText) {
  const Tokenizer tok = Tokenizer::from_file(kDemo + "/tokenizer.json");
  const std::vector<int32_t> got = tok.encode(read_file(kDemo + "/heldout.txt"), /*add_special_tokens=*/false);
  const std::vector<int64_t> want = heldout_tokens();
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(std::vector<int64_t>(got.begin(), got.end()), want);
}

class DemoPerplexity : public testing::TestWithParam<DType> {};

// The windowing of train.py: window k feeds tokens [w*k, w*k + w) from position 0 on a fresh
// state and scores the next token after each, so every token but the first is scored once. In each
// window the first `prefill_tokens` go through prefill (every row's logits are scored), the rest
// through one decode step each.
TEST_P(DemoPerplexity, HeldOutPerplexityMatchesPyTorch) {
  const nlohmann::json ev = heldout_eval();
  const std::vector<int64_t> tokens = heldout_tokens();
  const size_t window = ev["window"].get<size_t>();
  const double want = ev["perplexity"].get<double>();
  ASSERT_GT(tokens.size(), window) << "the held-out text should span more than one window";

  test::TempDir dir("e2e");
  GraphOptions g;
  g.prefill_len = 32;
  g.max_context = 512;
  g.cache_dtype = GetParam();
  g.repeat_state = true;
  ASSERT_LT(window, size_t(g.max_context));
  auto io = IOManagerRegistry::instance().load(Program::load(test::export_to(kDemo, dir.file("demo.hfs"), g)));
  auto& hf = dynamic_cast<HfStaticIOManager&>(*io);
  hf.set_all_logits(true);  // every prompt row is scored
  const int64_t V = io->model().vocab_size;
  const size_t prefill_tokens = 3 * 32 + 5;  // three full prefill chunks and a padded one

  double total = 0;
  size_t scored = 0, by_prefill = 0, by_decode = 0;
  for (size_t s = 0; s + 1 < tokens.size(); s += window) {
    const size_t end = std::min(tokens.size(), s + window + 1);  // inputs [s, end - 1), targets [s + 1, end)
    const std::span<const int64_t> inputs(tokens.data() + s, end - 1 - s);
    io->reset();
    const size_t n_prefill = std::min(prefill_tokens, inputs.size());
    for (const Step& st : io->plan(0, n_prefill)) {
      ASSERT_EQ(st.kind, StepKind::Prefill);
      ASSERT_TRUE(io->step(st.kind, st.start_pos, inputs.subspan(st.begin, st.count), nullptr).ok());
      const float* all =
          static_cast<const float*>(hf.execution(StepKind::Prefill).output_data(3 * io->model().n_layers));
      for (size_t r = 0; r < st.count; ++r) {
        total += nll(all + r * V, V, tokens[s + st.begin + r + 1]);
        ++scored, ++by_prefill;
      }
    }
    for (size_t i = n_prefill; i < inputs.size(); ++i) {
      ASSERT_TRUE(io->step(StepKind::Decode, int64_t(i), inputs.subspan(i, 1), nullptr).ok());
      const std::span<const float> logits = io->logits();
      ASSERT_EQ(int64_t(logits.size()), V);
      total += nll(logits.data(), V, tokens[s + i + 1]);
      ++scored, ++by_decode;
    }
  }
  ASSERT_EQ(scored, tokens.size() - 1);
  ASSERT_EQ(scored, ev["scored_tokens"].get<size_t>());
  EXPECT_GT(by_prefill, 0u);
  EXPECT_GT(by_decode, by_prefill);
  const double got = std::exp(total / double(scored));
  std::printf(
      "held-out perplexity over %zu tokens (%zu by prefill, %zu by decode), %s cache: hfstatic %.6f, PyTorch %.6f\n",
      scored, by_prefill, by_decode, dtype_name(GetParam()), got, want);
  EXPECT_NEAR(got, want, 0.01 * want);
}

INSTANTIATE_TEST_SUITE_P(CacheDtypes, DemoPerplexity, testing::Values(DType::F32, DType::F16),
                         [](const testing::TestParamInfo<DType>& info) { return std::string(dtype_name(info.param)); });

TEST(DemoModel, DefaultProgramPrintsWordsOfTheText) {
  const test::CommandResult r = test::run_cli({"run", "-n", "40"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_FALSE(r.out.empty());
  size_t printable = 0;
  for (unsigned char c : r.out) printable += std::isprint(c) || c == '\n' || c == '\t';
  EXPECT_GE(double(printable), 0.95 * double(r.out.size())) << r.out;
  EXPECT_TRUE(r.out.find(" the ") != std::string::npos || r.out.find(" and ") != std::string::npos ||
              r.out.find(" of ") != std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace hfstatic
