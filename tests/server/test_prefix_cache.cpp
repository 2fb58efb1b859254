// Prefix reuse (SlotHistory) against a real runner: a prompt fed from the prefix a slot's cache
// holds gives the logits and greedy tokens of a cold run, bit for bit.
#include <gtest/gtest.h>

#include <numeric>

#include "runner/runner.h"
#include "server/prefix_cache.h"
#include "server/slot_pool.h"
#include "test_support.h"

namespace hfstatic::server {
namespace {

// prefill_len 8, max_context 100: chunks at 0, 8, ..., 88 fit; past 96 a cold run decodes.
constexpr int64_t kChunk = 8, kContext = 100;

std::shared_ptr<const Program> program() {
  static std::shared_ptr<const Program> p = [] {
    static test::TempDir* dir = new test::TempDir("prefix-cache");
    GraphOptions g;
    g.prefill_len = kChunk;
    g.max_context = kContext;
    return Program::load(test::export_to(test::cached_checkpoint("tiny-qwen2", 2), dir->file("p.hfs"), g));
  }();
  return p;
}

std::unique_ptr<Runner> runner() {
  RunnerOptions o;
  o.threads = 1;
  return Runner::load(program(), o);
}

std::vector<int64_t> tokens(size_t n, int64_t seed) {
  std::vector<int64_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = 1 + (seed * 131 + int64_t(i) * 37 + int64_t(i * i) % 11) % 250;
  return t;
}

std::vector<int64_t> concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

GenerationConfig greedy(int64_t n) {
  GenerationConfig c;
  c.max_new_tokens = n;
  c.ignore_eos = true;
  return c;
}

std::vector<float> copy(std::span<const float> logits) { return {logits.begin(), logits.end()}; }

class PrefixCache : public testing::Test {
 protected:
  // Generates `n` greedy tokens after `prompt` in the warm slot; returns the tokens reused.
  size_t warm_generate(const std::vector<int64_t>& prompt, int64_t n, GenerationResult* out = nullptr) {
    const size_t reused = history_.prepare(*warm_, prompt);
    GenerationResult g = warm_->generate_tokens(std::span<const int64_t>(prompt).subspan(reused), greedy(n));
    history_.update(*warm_, prompt);
    if (out) *out = g;
    return reused;
  }
  // Feeds `prompt` to the warm slot from what it shares and to a cold runner from 0; expects the
  // same next-token logits and the same greedy continuation. Returns the tokens reused.
  size_t expect_same_as_cold(const std::vector<int64_t>& prompt) {
    const size_t reused = history_.prepare(*warm_, prompt);
    EXPECT_EQ(size_t(warm_->position()), reused);
    const std::vector<float> warm = copy(warm_->prefill(std::span<const int64_t>(prompt).subspan(reused)));
    cold_->reset();
    const std::vector<float> cold = copy(cold_->prefill(prompt));
    EXPECT_EQ(warm, cold) << "reused " << reused << " of " << prompt.size();
    // Greedy tokens too, through generate_tokens (the pending token of the prefill goes first).
    warm_->rewind(1);
    cold_->rewind(1);
    const int64_t room = std::min<int64_t>(6, kContext - int64_t(prompt.size()));
    GenerationResult w =
        warm_->generate_tokens(std::span<const int64_t>(prompt).subspan(prompt.size() - 1), greedy(room));
    GenerationResult c =
        cold_->generate_tokens(std::span<const int64_t>(prompt).subspan(prompt.size() - 1), greedy(room));
    EXPECT_EQ(w.tokens, c.tokens);
    history_.update(*warm_, prompt);
    return reused;
  }

  std::unique_ptr<Runner> warm_ = runner(), cold_ = runner();
  SlotHistory history_;
};

TEST_F(PrefixCache, AnEmptySlotReusesNothing) {
  EXPECT_EQ(expect_same_as_cold(tokens(20, 1)), 0u);
  EXPECT_EQ(history_.tokens(), tokens(20, 1));
}

// Turn two of a conversation: the first prompt is reused (it ends inside a chunk), the reply
// is fed again, being decoded rows, not prefill rows.
TEST_F(PrefixCache, ASecondTurnReusesThePromptNotTheReply) {
  const std::vector<int64_t> first = tokens(13, 2);
  GenerationResult reply;
  ASSERT_EQ(warm_generate(first, 5, &reply), 0u);
  EXPECT_EQ(history_.tokens(), first);  // the decoded reply is not exact
  const std::vector<int64_t> second = concat(concat(first, reply.tokens), tokens(11, 3));
  EXPECT_EQ(expect_same_as_cold(second), first.size());
  // Turn three reuses all of turn two's prompt, reply included.
  const std::vector<int64_t> third = concat(second, tokens(9, 4));
  EXPECT_EQ(expect_same_as_cold(third), second.size());
}

TEST_F(PrefixCache, AShorterPromptThanTheHistory) {
  const std::vector<int64_t> long_prompt = tokens(40, 5);
  expect_same_as_cold(long_prompt);
  const std::vector<int64_t> shorter(long_prompt.begin(), long_prompt.begin() + 21);
  EXPECT_EQ(expect_same_as_cold(shorter), 20u);  // the last token is fed again, for its logits
  EXPECT_EQ(expect_same_as_cold(shorter), 20u);  // the same prompt twice
}

TEST_F(PrefixCache, ADifferentSystemPromptReusesWhatComesBeforeIt) {
  const std::vector<int64_t> a = concat(tokens(3, 6), concat(tokens(12, 7), tokens(10, 8)));
  const std::vector<int64_t> b = concat(tokens(3, 6), concat(tokens(12, 9), tokens(10, 8)));
  ASSERT_NE(a[3], b[3]);
  expect_same_as_cold(a);
  EXPECT_EQ(expect_same_as_cold(b), 3u);
}

TEST_F(PrefixCache, ASlotReusedAfterAnotherConversation) {
  const std::vector<int64_t> a = tokens(30, 10), b = tokens(25, 11);
  expect_same_as_cold(a);
  expect_same_as_cold(b);  // another conversation takes the slot
  const std::vector<int64_t> a2 = concat(a, tokens(7, 12));
  EXPECT_EQ(expect_same_as_cold(a2), 0u);
  EXPECT_EQ(expect_same_as_cold(concat(a2, tokens(3, 13))), a2.size());
}

// Near the end of the context a cold run decodes what a run from the shared prefix would
// prefill: reuse falls back to the last chunk boundary, where both plans agree.
TEST_F(PrefixCache, NearTheContextEndReuseStartsAtAChunkBoundary) {
  const std::vector<int64_t> a = tokens(85, 14);
  expect_same_as_cold(a);
  const std::vector<int64_t> b = concat(a, tokens(14, 15));  // 99 tokens: 96..98 decoded cold
  ASSERT_FALSE(same_plan_as_cold(warm_->io(), 85, b.size()));
  EXPECT_EQ(expect_same_as_cold(b), 80u);
  EXPECT_TRUE(same_plan_as_cold(warm_->io(), 80, b.size()));
}

TEST(SlotPoolPreference, TheHighestRankWinsAndTiesTakeTheSlotFreeTheLongest) {
  SlotPool pool(3, 0);
  std::vector<size_t> rank = {0, 5, 2};
  auto by_rank = [&](size_t i) { return rank[i]; };
  SlotLease a = pool.acquire(nullptr, std::chrono::hours(1), by_rank);
  EXPECT_EQ(a.index(), 1u);
  SlotLease b = pool.acquire(nullptr, std::chrono::hours(1), by_rank);
  EXPECT_EQ(b.index(), 2u);
  b.release();
  a.release();
  rank = {0, 0, 0};
  // Free the longest: slot 0 (never taken), then 2 (freed before 1).
  SlotLease c = pool.acquire(nullptr, std::chrono::hours(1), by_rank);
  EXPECT_EQ(c.index(), 0u);
  SlotLease d = pool.acquire(nullptr, std::chrono::hours(1), by_rank);
  EXPECT_EQ(d.index(), 2u);
}

}  // namespace
}  // namespace hfstatic::server
