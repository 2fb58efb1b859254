// Batched decode measured against one stream in the same run (`hfstatic bench --batch B`): B
// sequences, each fed the bench's prompt, then -n decode steps of all of them together
// (IOManager::decode_batch), against -n decode steps of one sequence alone.
#pragma once
#include <nlohmann/json.hpp>

#include "bench/bench.h"

namespace hfstatic::bench {

// {"streams": B, "tokens": n, "single": {tokens_per_s, ms_per_token}, "batched": {tokens_per_s
// (all streams together), ms_per_token (of each stream), speedup (aggregate over single),
// latency_ratio (per-stream time per token over single)}}; each the median of options.reps runs.
// Throws Error.
nlohmann::json run_batch_bench(const BenchOptions& options, int64_t streams);

}  // namespace hfstatic::bench
