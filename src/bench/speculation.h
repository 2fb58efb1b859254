// Speculative decoding measured against plain decoding in the same run (`hfstatic bench
// --lookup K`): greedy generation from the bench's prompt with prompt lookup, and the ceiling of
// the mechanism, drafts that are the true greedy continuation, for k = 1, 2, 4, 8.
#pragma once
#include <nlohmann/json.hpp>

#include "bench/bench.h"

namespace hfstatic::bench {

// {"plain": {tokens_per_s...}, "lookup": {k, tokens_per_s, speedup, tokens_per_step,
// acceptance, identical}, "ceiling": [{k, tokens_per_s, speedup, tokens_per_step}]}; each
// tokens/s the median of options.reps runs. Throws Error.
nlohmann::json run_speculation_bench(const BenchOptions& options, int64_t lookup);

}  // namespace hfstatic::bench
