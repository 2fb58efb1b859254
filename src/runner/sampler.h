// Next-token selection from logits.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace hfstatic {

struct SamplingConfig {
  float temperature = 0.0f;         // 0: greedy
  int64_t top_k = 0;                // 0: off
  float top_p = 1.0f;               // 1: off
  float min_p = 0.0f;               // 0: off
  float repetition_penalty = 1.0f;  // 1: off; applied to tokens in the last repetition_window
  int64_t repetition_window = 64;
  uint64_t seed = 0;
};

// The values each sampling parameter accepts, one table for every front end (run's flags, the
// server's fields, Python's arguments): temperature [0, 2], top-k [0, 2^31], top-p and min-p
// [0, 1], repetition penalty [0.01, 100].
enum class SamplingParameter { temperature, top_k, top_p, min_p, repetition_penalty };
struct SamplingRange {
  double lo, hi;
};
SamplingRange sampling_range(SamplingParameter p);
// Empty when `value` is within p's range; otherwise why not, e.g. "2.5 is outside [0, 2]", for
// the front end to put after its own name of the parameter.
std::string sampling_value_problem(SamplingParameter p, double value);

class Sampler {
 public:
  explicit Sampler(const SamplingConfig& config);
  // `recent` are the context's tokens, for the repetition penalty.
  int64_t sample(std::span<const float> logits, std::span<const int64_t> recent);
  // Speculative decoding's check of a drafted token: the draft is accepted with the probability
  // this sampler gives it (greedy: when it is the argmax), and on rejection a token is drawn
  // from the rest of the distribution renormalized, so that the tokens come out as sample()
  // would draw them. *accepted says whether the token returned is the draft.
  int64_t sample_draft(std::span<const float> logits, std::span<const int64_t> recent, int64_t draft, bool* accepted);

 private:
  // The penalised logits in scratch_; with a temperature, the kept tokens in order_ (most likely
  // first) and their probabilities in probs_, of total mass_ (before renormalizing).
  void distribution(std::span<const float> logits, std::span<const int64_t> recent);
  double uniform();  // [0, 1)
  SamplingConfig config_;
  uint64_t state_;
  std::vector<float> scratch_;
  std::vector<int64_t> order_;
  std::vector<double> probs_;
  double mass_ = 0;
};

}  // namespace hfstatic
