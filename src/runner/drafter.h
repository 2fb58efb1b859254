// Drafters for speculative decoding: what proposes the tokens a runner then verifies in one
// step (Runner::generate_tokens with GenerationConfig::drafter).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace hfstatic {

class Runner;

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Up to max_tokens tokens likely to follow `context` (every token so far, the last one not
  // yet fed to the model). Empty: no guess, decode as usual. Throws Error.
  virtual std::vector<int64_t> propose(std::span<const int64_t> context, int64_t max_tokens) = 0;
};

// Prompt lookup: the longest recent n-gram ending the context (ngram_max tokens down to
// ngram_min) that occurred earlier in the context proposes what followed its latest earlier
// occurrence, continued by the same period where it reaches the context's end. No second
// model: it pays off where text repeats (code, quotes, greedy loops).
class PromptLookup : public Drafter {
 public:
  explicit PromptLookup(int64_t ngram_max = 3, int64_t ngram_min = 1);
  std::vector<int64_t> propose(std::span<const int64_t> context, int64_t max_tokens) override;

 private:
  int64_t ngram_max_, ngram_min_;
};

// A draft program: a smaller model with the same vocabulary whose greedy tokens are the drafts.
// It keeps its own context and caches, rewound to what it shares with the target's context
// before each proposal (rewinding is free: counters and masks come from the position).
class DraftModel : public Drafter {
 public:
  // Throws Error naming both programs when their vocabularies differ (the model's size, or the
  // token strings of their tokenizers).
  DraftModel(std::unique_ptr<Runner> draft, const Runner& target, const std::string& draft_name,
             const std::string& target_name);
  ~DraftModel() override;
  std::vector<int64_t> propose(std::span<const int64_t> context, int64_t max_tokens) override;

 private:
  std::unique_ptr<Runner> draft_;
};

}  // namespace hfstatic
