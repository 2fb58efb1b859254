// The speculative decoding flags of run and serve: --lookup K (prompt lookup drafts up to K
// tokens) or --draft FILE (a draft program's greedy tokens, up to --draft-max K, default 4).
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "runner/drafter.h"
#include "runner/runner.h"

namespace hfstatic::cli {

class Args;

inline constexpr const char* kLookupFlag = "--lookup";
inline constexpr const char* kDraftFlag = "--draft";
inline constexpr const char* kDraftMaxFlag = "--draft-max";

struct Speculation {
  int64_t lookup = 0;                // > 0: prompt lookup of up to this many tokens
  std::optional<std::string> draft;  // a draft program
  int64_t draft_max = 4;
  bool on() const { return lookup > 0 || draft.has_value(); }
  int64_t max_tokens() const { return lookup > 0 ? lookup : draft_max; }
};

// Throws UsageError for both --lookup and --draft, or --draft-max without --draft.
Speculation speculation_flags(const Args& args);
// The drafter for one target runner (each runner needs its own: a draft program keeps a
// context); null when speculation is off. Throws Error naming both programs when the draft's
// vocabulary differs.
std::unique_ptr<Drafter> make_drafter(const Speculation& s, const Runner& target, const std::string& target_name,
                                      const RunnerOptions& options);

}  // namespace hfstatic::cli
