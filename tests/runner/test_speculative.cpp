// Speculative decoding: prompt lookup's proposals, greedy generation with drafts token for
// token the plain one (every tiny preset, float32 and float16 caches, int8 and int4 weights,
// prompts ending inside a chunk, a context filled mid-draft, drafts that are always right and
// always wrong), and sampled generation keeping the sampler's distribution.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "export/exporter.h"
#include "export/make_checkpoint.h"
#include "runner/drafter.h"
#include "runner/runner.h"
#include "test_support.h"

namespace hfstatic {
namespace {

TEST(PromptLookup, ProposesWhatFollowedTheLatestEarlierOccurrence) {
  PromptLookup lookup(3, 1);
  // "5 6 7" occurred at 1 and 6; the latest is followed by 9 9.
  const std::vector<int64_t> context = {1, 5, 6, 7, 8, 2, 5, 6, 7, 9, 9, 3, 5, 6, 7};
  EXPECT_EQ(lookup.propose(context, 2), (std::vector<int64_t>{9, 9}));
  EXPECT_EQ(lookup.propose(context, 5), (std::vector<int64_t>{9, 9, 3, 5, 6}));
  // Only a 1-gram matches: 4 at 0 is followed by 2.
  EXPECT_EQ(lookup.propose(std::vector<int64_t>{4, 2, 3, 1, 4}, 3), (std::vector<int64_t>{2, 3, 1}));
  // Past the context's end the proposal continues with the same period.
  EXPECT_EQ(lookup.propose(std::vector<int64_t>{8, 8}, 4), (std::vector<int64_t>{8, 8, 8, 8}));
  EXPECT_EQ(lookup.propose(std::vector<int64_t>{1, 2, 3, 1, 2, 3, 1, 2}, 5), (std::vector<int64_t>{3, 1, 2, 3, 1}));
  EXPECT_TRUE(lookup.propose(std::vector<int64_t>{1, 2, 3}, 4).empty());
  EXPECT_TRUE(lookup.propose(std::vector<int64_t>{1, 1}, 0).empty());
  EXPECT_TRUE(PromptLookup(3, 2).propose(std::vector<int64_t>{4, 2, 3, 1, 4}, 3).empty());
  EXPECT_THROW(PromptLookup(1, 2), Error);
}

// Proposes a fixed script: the true continuation (every draft right) or junk (every one wrong).
class ScriptedDrafter : public Drafter {
 public:
  explicit ScriptedDrafter(std::vector<int64_t> script, bool wrong = false)
      : script_(std::move(script)), wrong_(wrong) {}
  std::vector<int64_t> propose(std::span<const int64_t> context, int64_t max_tokens) override {
    std::vector<int64_t> out;
    for (size_t i = context.size(); i < script_.size() && int64_t(out.size()) < max_tokens; ++i)
      out.push_back(wrong_ ? (script_[i] + 1) % 200 : script_[i]);
    return out;
  }

 private:
  std::vector<int64_t> script_;
  bool wrong_;
};

constexpr int64_t kPrefill = 8, kContext = 64;

std::string export_variant(const test::TempDir& dir, const std::string& preset, DType cache,
                           std::optional<WeightQuant> quant) {
  ExportOptions o;
  o.graph.prefill_len = kPrefill;
  o.graph.max_context = kContext;
  o.graph.cache_dtype = cache;
  o.quant = quant;
  const std::string path = dir.file(preset + "-" + dtype_name(cache) + (quant ? "-q" : "") + ".hfs");
  export_program(test::cached_checkpoint(preset, 5), path, o);
  return path;
}

GenerationConfig greedy(int64_t n, Drafter* drafter = nullptr, int64_t draft_max = 4) {
  GenerationConfig g;
  g.max_new_tokens = n;
  g.ignore_eos = true;
  g.drafter = drafter;
  g.draft_max = draft_max;
  return g;
}

class Speculative : public testing::TestWithParam<std::string> {};

TEST_P(Speculative, GreedyTokensAreThePlainOnes) {
  test::TempDir dir("speculative");
  struct Variant {
    DType cache;
    std::optional<WeightQuant> quant;
  };
  for (const Variant& v : {Variant{DType::F32, std::nullopt}, Variant{DType::F16, WeightQuant{DType::I8, 32}},
                           Variant{DType::F32, WeightQuant{DType::I4, 32}}}) {
    auto program = Program::load(export_variant(dir, GetParam(), v.cache, v.quant));
    RunnerOptions options;
    options.threads = 1;
    // Prompts of 3 (inside a chunk) and 13 tokens, repetitive so that lookup has matches; the
    // longer one with 51 new tokens fills the context of 64 mid-draft.
    for (int64_t prompt_len : {3, 13}) {
      std::vector<int64_t> prompt;
      for (int64_t i = 0; i < prompt_len; ++i) prompt.push_back(10 + i % 4);
      const int64_t n = kContext - prompt_len;
      const std::string what = GetParam() + " " + dtype_name(v.cache) + (v.quant ? " quantized" : "") + " prompt " +
                               std::to_string(prompt_len);
      const GenerationResult plain = Runner::load(program, options)->generate_tokens(prompt, greedy(n));
      ASSERT_EQ(plain.stats.accepted_tokens, 0);
      std::vector<int64_t> script = prompt;
      script.insert(script.end(), plain.tokens.begin(), plain.tokens.end());

      PromptLookup lookup;
      ScriptedDrafter right(script), wrong(script, true);
      for (auto [drafter, k] :
           {std::pair<Drafter*, int64_t>{&lookup, 4}, {&lookup, 7}, {&right, 4}, {&right, 7}, {&wrong, 3}}) {
        const GenerationResult spec = Runner::load(program, options)->generate_tokens(prompt, greedy(n, drafter, k));
        ASSERT_EQ(spec.tokens, plain.tokens) << what << " k=" << k;
        EXPECT_EQ(spec.stop_reason, plain.stop_reason) << what;
        if (drafter == &right) {
          EXPECT_GT(spec.stats.accepted_tokens, n / 2) << what;
          EXPECT_LT(spec.stats.steps, plain.stats.steps / 2) << what;
        }
        if (drafter == &wrong) {
          EXPECT_EQ(spec.stats.accepted_tokens, 0) << what;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, Speculative,
                         testing::Values("tiny", "tiny-qwen3", "tiny-gemma3", "tiny-phi3", "tiny-mistral-sw"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// A draft program: the target itself (every draft right) and another model of the same
// vocabulary give the plain greedy tokens; one of another vocabulary is refused, naming both.
TEST(DraftModel, GreedyTokensAreThePlainOnesAndVocabulariesMustMatch) {
  test::TempDir dir("draft-model");
  const std::string target_path = export_variant(dir, "tiny", DType::F32, std::nullopt);
  const std::string other_path = export_variant(dir, "tiny-qwen2", DType::F16, WeightQuant{DType::I8, 32});
  RunnerOptions options;
  options.threads = 1;
  auto target = Runner::load(target_path, options);
  const std::vector<int64_t> prompt = {10, 11, 12, 13, 10, 11};
  const GenerationResult plain = target->generate_tokens(prompt, greedy(40));
  for (const std::string& draft_path : {target_path, other_path}) {
    DraftModel draft(Runner::load(draft_path, options), *target, draft_path, target_path);
    target->reset();
    const GenerationResult spec = target->generate_tokens(prompt, greedy(40, &draft, 4));
    EXPECT_EQ(spec.tokens, plain.tokens) << draft_path;
    if (draft_path == target_path) {
      EXPECT_GE(spec.stats.accepted_tokens, 30);
    }
    // A second generation continues the conversation: the draft rewinds to what it shares.
    target->reset();
    EXPECT_EQ(target->generate_tokens(prompt, greedy(40, &draft, 4)).tokens, plain.tokens) << draft_path;
  }
  ExportOptions o;
  o.graph.prefill_len = kPrefill;
  o.graph.max_context = kContext;
  const std::string demo = dir.file("demo.hfs");
  export_program(std::string(HFSTATIC_SOURCE_DIR) + "/models/demo", demo, o);
  EXPECT_THAT(test::error_of([&] { DraftModel(Runner::load(demo, options), *target, demo, target_path); }),
              testing::HasSubstr("draft program " + demo + " has a vocabulary of 4096 tokens, the program " +
                                 target_path + " of 272"));
}

// With a temperature the drafted token is accepted with the probability the sampler gives it:
// the first two tokens of many seeded runs have the same joint distribution with and without a
// draft of the second (total variation within what 6000 samples allow: about 0.02 expected),
// and drafts were accepted.
TEST(SpeculativeSampling, KeepsTheSamplersDistribution) {
  test::TempDir dir("speculative-sampling");
  auto program = Program::load(export_variant(dir, "tiny", DType::F32, std::nullopt));
  RunnerOptions options;
  options.threads = 1;
  auto runner = Runner::load(program, options);
  const std::vector<int64_t> prompt = {10, 11, 12, 10, 11, 12, 10, 11};
  // Drafts the token the plain runs most often give second.
  std::map<int64_t, int> plain, drafted;
  const int kRuns = 6000;
  int64_t accepted = 0;
  int64_t mode = 0;
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1)
      mode = std::max_element(plain.begin(), plain.end(), [](auto& a, auto& b) { return a.second < b.second; })->first %
             1000;
    for (int seed = 0; seed < kRuns; ++seed) {
      GenerationConfig g;
      g.max_new_tokens = 2;
      g.ignore_eos = true;
      g.sampling.temperature = 0.6f;
      g.sampling.top_k = 3;
      g.sampling.seed = uint64_t(seed) + (pass ? 1000000 : 0);
      ScriptedDrafter fixed(std::vector<int64_t>(prompt.size() + 2, mode));
      if (pass == 1) g.drafter = &fixed;
      runner->reset();
      const GenerationResult r = runner->generate_tokens(prompt, g);
      ASSERT_EQ(r.tokens.size(), 2u);
      (pass ? drafted : plain)[r.tokens[0] * 1000 + r.tokens[1]]++;
      accepted += r.stats.accepted_tokens;
    }
  }
  double tv = 0;
  std::map<int64_t, int> all = plain;
  for (auto& [t, c] : drafted) all[t] += 0;
  for (auto& [t, c] : all) tv += std::fabs(double(plain[t]) - double(drafted[t])) / kRuns;
  tv /= 2;
  EXPECT_GT(accepted, 0);
  EXPECT_LT(tv, 0.05) << "total variation between sampling with and without drafts";
}

}  // namespace
}  // namespace hfstatic
