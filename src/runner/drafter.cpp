#include "runner/drafter.h"

#include <algorithm>

#include "runner/runner.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace hfstatic {

PromptLookup::PromptLookup(int64_t ngram_max, int64_t ngram_min) : ngram_max_(ngram_max), ngram_min_(ngram_min) {
  if (ngram_min < 1 || ngram_max < ngram_min)
    fail("prompt lookup: n-gram sizes ", ngram_min, " to ", ngram_max, " are not 1 <= min <= max");
}

std::vector<int64_t> PromptLookup::propose(std::span<const int64_t> context, int64_t max_tokens) {
  const int64_t size = int64_t(context.size());
  if (max_tokens <= 0) return {};
  for (int64_t n = std::min(ngram_max_, size - 1); n >= ngram_min_; --n) {
    const auto key = context.subspan(size_t(size - n));
    // The latest earlier occurrence: starts from size - n - 1 down.
    for (int64_t start = size - n - 1; start >= 0; --start) {
      if (!std::equal(key.begin(), key.end(), context.begin() + start)) continue;
      // What followed, continued past the context's end by the same period (a loop of a few
      // tokens drafts max_tokens of itself).
      const int64_t from = start + n, period = size - from;
      std::vector<int64_t> out;
      for (int64_t i = 0; i < max_tokens; ++i)
        out.push_back(i < period ? context[size_t(from + i)] : out[size_t(i - period)]);
      return out;
    }
  }
  return {};
}

DraftModel::DraftModel(std::unique_ptr<Runner> draft, const Runner& target, const std::string& draft_name,
                       const std::string& target_name)
    : draft_(std::move(draft)) {
  const int64_t dv = draft_->model().vocab_size, tv = target.model().vocab_size;
  if (dv != tv)
    fail("draft program ", draft_name, " has a vocabulary of ", dv, " tokens, the program ", target_name, " of ", tv,
         ": a draft must share the target's vocabulary");
  const Tokenizer *dt = draft_->tokenizer(), *tt = target.tokenizer();
  if (dt && tt) {
    if (dt->vocab_size() != tt->vocab_size())
      fail("draft program ", draft_name, "'s tokenizer has ", dt->vocab_size(), " tokens, the program ", target_name,
           "'s ", tt->vocab_size(), ": a draft must share the target's tokenizer");
    for (int32_t id = 0; id < dt->vocab_size(); ++id)
      if (dt->token(id) != tt->token(id))
        fail("draft program ", draft_name, "'s tokenizer has token ", id, " = '", dt->token(id).substr(0, 40),
             "' where the program ", target_name, "'s has '", tt->token(id).substr(0, 40),
             "': a draft must share the target's tokenizer");
  }
}

DraftModel::~DraftModel() = default;

std::vector<int64_t> DraftModel::propose(std::span<const int64_t> context, int64_t max_tokens) {
  if (max_tokens <= 0 || context.empty()) return {};
  // Back to what the draft's context shares with the target's, then the rest as a prompt.
  const std::vector<int64_t>& own = draft_->context();
  size_t shared = 0;
  while (shared < own.size() && shared < context.size() && own[shared] == context[shared]) ++shared;
  if (shared == context.size()) --shared;  // the last token is fed again: its logits are needed
  draft_->rewind(draft_->context().size() - shared);
  const int64_t room = draft_->model().max_context - int64_t(context.size());
  if (room <= 0) return {};
  std::span<const float> logits = draft_->prefill(context.subspan(shared));
  std::vector<int64_t> out;
  const int64_t count = std::min(max_tokens, room);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t token = std::max_element(logits.begin(), logits.end()) - logits.begin();
    out.push_back(token);
    if (i + 1 < count) logits = draft_->decode(token);
  }
  return out;
}

}  // namespace hfstatic
