#include "runner/drafter.h"

#include <algorithm>

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
      const int64_t from = start + n, count = std::min(max_tokens, size - from);
      return {context.begin() + from, context.begin() + from + count};
    }
  }
  return {};
}

}  // namespace hfstatic
