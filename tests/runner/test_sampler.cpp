// Sampler: each option changes the choice the way its definition says.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <tuple>

#include "runner/sampler.h"

namespace hfstatic {
namespace {

std::map<int64_t, int> histogram(const SamplingConfig& c, const std::vector<float>& logits, int draws,
                                 const std::vector<int64_t>& recent = {}) {
  Sampler s(c);
  std::map<int64_t, int> h;
  for (int i = 0; i < draws; ++i) ++h[s.sample(logits, recent)];
  return h;
}

TEST(SamplingRanges, EachParameterAcceptsItsRangeAndNamesItOtherwise) {
  using P = SamplingParameter;
  for (auto [p, lo, hi] :
       {std::tuple{P::temperature, 0.0, 2.0}, std::tuple{P::top_k, 0.0, 2147483648.0}, std::tuple{P::top_p, 0.0, 1.0},
        std::tuple{P::min_p, 0.0, 1.0}, std::tuple{P::repetition_penalty, 0.01, 100.0}}) {
    EXPECT_EQ(sampling_value_problem(p, lo), "");
    EXPECT_EQ(sampling_value_problem(p, hi), "");
    EXPECT_NE(sampling_value_problem(p, std::nextafter(lo, -1.0)), "") << lo;
    EXPECT_NE(sampling_value_problem(p, std::nextafter(hi, 1e300)), "") << hi;
    EXPECT_NE(sampling_value_problem(p, NAN), "");
  }
  EXPECT_EQ(sampling_value_problem(P::temperature, 2.5), "2.5 is outside [0, 2]");
  EXPECT_EQ(sampling_value_problem(P::top_k, 2147483649.0), "2147483649 is outside [0, 2147483648]");
  EXPECT_EQ(sampling_value_problem(P::repetition_penalty, 0.001), "0.001 is outside [0.01, 100]");
}

TEST(Sampler, GreedyTakesTheLargestLogitAndIgnoresNaN) {
  Sampler s(SamplingConfig{});
  std::vector<float> logits = {0.1f, 2.0f, NAN, 1.9f};
  EXPECT_EQ(s.sample(logits, {}), 1);
  logits[3] = 2.5f;
  EXPECT_EQ(s.sample(logits, {}), 3);
}

TEST(Sampler, SameSeedSameSequenceDifferentSeedDifferentSequence) {
  std::vector<float> logits(50);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = float(i % 7) * 0.3f;
  SamplingConfig c;
  c.temperature = 1.0f;
  c.seed = 42;
  Sampler a(c), b(c);
  c.seed = 43;
  Sampler other(c);
  std::vector<int64_t> sa, sb, so;
  for (int i = 0; i < 64; ++i) {
    sa.push_back(a.sample(logits, {}));
    sb.push_back(b.sample(logits, {}));
    so.push_back(other.sample(logits, {}));
  }
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, so);
}

TEST(Sampler, TemperatureSamplingFollowsTheSoftmax) {
  const std::vector<float> logits = {0.0f, std::log(2.0f), std::log(3.0f), std::log(4.0f)};  // p = 1,2,3,4 / 10
  SamplingConfig c;
  c.temperature = 1.0f;
  c.seed = 7;
  const int draws = 20000;
  auto h = histogram(c, logits, draws);
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(double(h[k]) / draws, (k + 1) / 10.0, 0.015) << "token " << k;
  // A low temperature sharpens the distribution towards the best token.
  c.temperature = 0.25f;
  auto sharp = histogram(c, logits, draws);
  EXPECT_GT(double(sharp[3]) / draws, 0.6);
}

TEST(Sampler, TopKKeepsOnlyTheKBest) {
  const std::vector<float> logits = {3.0f, 0.0f, 2.9f, 2.8f, -1.0f};
  SamplingConfig c;
  c.temperature = 5.0f;  // nearly uniform before the cut
  c.top_k = 2;
  auto h = histogram(c, logits, 2000);
  EXPECT_GT(h[0], 0);
  EXPECT_GT(h[2], 0);
  EXPECT_EQ(h[0] + h[2], 2000);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
  // p = 0.5, 0.3, 0.2: top_p 0.7 keeps the first two, top_p 0.4 only the first.
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  SamplingConfig c;
  c.temperature = 1.0f;
  c.top_p = 0.7f;
  auto h = histogram(c, logits, 4000);
  EXPECT_EQ(h[2], 0);
  EXPECT_GT(h[1], 1000);
  c.top_p = 0.4f;
  h = histogram(c, logits, 500);
  EXPECT_EQ(h[0], 500);
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheBest) {
  // p = 0.6, 0.3, 0.1: min_p 0.2 drops the last (0.1 < 0.2 * 0.6) and keeps the second.
  const std::vector<float> logits = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
  SamplingConfig c;
  c.temperature = 1.0f;
  c.min_p = 0.2f;
  auto h = histogram(c, logits, 4000);
  EXPECT_EQ(h[2], 0);
  EXPECT_GT(h[1], 1000);
}

TEST(Sampler, RepetitionPenaltyDemotesRecentTokens) {
  const std::vector<float> logits = {2.0f, 1.8f, -1.0f};
  SamplingConfig c;
  c.repetition_penalty = 1.5f;
  Sampler s(c);
  EXPECT_EQ(s.sample(logits, {}), 0);
  EXPECT_EQ(s.sample(logits, std::vector<int64_t>{0}), 1);  // 2.0 / 1.5 < 1.8
  // Outside the window the token is not penalised.
  c.repetition_window = 1;
  Sampler windowed(c);
  EXPECT_EQ(windowed.sample(logits, std::vector<int64_t>{0, 2}), 0);
}

}  // namespace
}  // namespace hfstatic
