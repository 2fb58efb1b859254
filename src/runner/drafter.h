// Drafters for speculative decoding: what proposes the tokens a runner then verifies in one
// step (Runner::generate_tokens with GenerationConfig::drafter).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace hfstatic {

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Up to max_tokens tokens likely to follow `context` (every token so far, the last one not
  // yet fed to the model). Empty: no guess, decode as usual. Throws Error.
  virtual std::vector<int64_t> propose(std::span<const int64_t> context, int64_t max_tokens) = 0;
};

// Prompt lookup: the longest recent n-gram ending the context (ngram_max tokens down to
// ngram_min) that occurred earlier in the context proposes what followed its latest earlier
// occurrence. No second model: it pays off where text repeats (code, quotes, greedy loops).
class PromptLookup : public Drafter {
 public:
  explicit PromptLookup(int64_t ngram_max = 3, int64_t ngram_min = 1);
  std::vector<int64_t> propose(std::span<const int64_t> context, int64_t max_tokens) override;

 private:
  int64_t ngram_max_, ngram_min_;
};

}  // namespace hfstatic
