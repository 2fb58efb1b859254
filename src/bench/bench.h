// Measurement for `hfstatic bench`: model throughput (prefill and decode, llama-bench style)
// and the machine ceilings it is judged against (memory bandwidth, FMA peak), with a cost model
// of a program's methods (bytes a decode step reads, FLOPs a prefill performs).
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "executor/runtime_options.h"

namespace hfstatic {
class Program;
class ThreadPool;
}  // namespace hfstatic

namespace hfstatic::bench {

// Median, min and max of repeated measurements.
struct Stats {
  double median = 0, min = 0, max = 0;
  static Stats of(std::vector<double> samples);
  nlohmann::json to_json() const;
};

// ---- machine ceilings -------------------------------------------------------------------

// A buffer much larger than the caches, advised huge pages as the weights' mapping is (unless
// huge_pages is false), allocated and touched once (from the threads that will read it), then
// measured by STREAM-style passes split over the pool's threads (none: one thread).
class BandwidthProbe {
 public:
  BandwidthProbe(ThreadPool* pool, uint64_t bytes, bool huge_pages = true);
  uint64_t bytes() const { return bytes_; }
  double read_gbps(int passes);                      // best pass: sum over the buffer (the decode access pattern)
  double triad_gbps(int passes);                     // best pass: a = b + s * c (STREAM convention: 3 arrays counted)
  std::optional<double> huge_page_fraction() const;  // of the buffer's resident bytes, in huge pages

 private:
  std::pair<size_t, size_t> part(size_t total, int64_t index) const;  // a thread's share

  ThreadPool* pool_;
  int64_t parts_;
  size_t n_;  // 64-bit words
  uint64_t bytes_;
  std::unique_ptr<uint64_t[], void (*)(void*)> buf_;
};

struct PeakResult {
  double fma_gflops = 0;   // independent FMAs on registers: the single-precision peak
  double gemm_gflops = 0;  // the library's linear kernel on an in-cache problem
  double region_us = 0;    // region_handover_us: what each parallel region of a step pays
  std::string isa;
};
// With the vectors and kernels of `isa` (supported by this CPU).
PeakResult measure_peak(ThreadPool* pool, kernels::Isa isa);
// Best of `runs` short runs of independent FMAs on every thread of `pool` (none: one thread),
// GFLOP/s with the vectors of `isa`: measure_peak's fma_gflops, which takes 50.
double fma_peak_gflops(ThreadPool* pool, int runs, kernels::Isa isa);
// Microseconds a call of fn takes in the fastest of `passes` passes of `calls` calls.
template <typename Fn>
double fastest_us_per_call(int calls, int passes, Fn&& fn) {
  double best = 1e30;
  for (int p = 0; p < passes; ++p) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) fn();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best / calls * 1e6;
}
// Microseconds a parallel region with nothing to do costs on `pool` (every thread takes one
// item), the fastest of `passes` passes of `regions`: the hand-over between the cores, which a
// shared host makes 3-4x dearer in some phases than in others. 0 with one thread.
double region_handover_us(ThreadPool* pool, int regions, int passes);

// ---- cost model ---------------------------------------------------------------------------

// Per-method costs read from the program's graph.
struct MethodCost {
  int64_t rows = 0;                 // rows the method computes (prefill_len or 1)
  double linear_params = 0;         // multiply-adds per row in linear ops
  double output_linear_params = 0;  // of those, in linear ops producing a method output (logits),
                                    // which the IOManager computes for one row a step
  double weight_bytes = 0;          // bytes of linear and norm weights read once per call (with scales)
  double embedding_row_bytes = 0;   // bytes of one embedding row (with its scales)
  // Mixture-of-experts layers: a row runs the router and top_k experts of each. weight_bytes and
  // linear_params count the router and top_k experts of average size (what a decode step reads);
  // expert_bytes is the size of all experts, routed_expert_bytes the top_k of them counted.
  double expert_bytes = 0, routed_expert_bytes = 0;
  // Per layer with attention: n_heads, n_kv_heads, head_dim, cache element size.
  struct Attention {
    int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0, elem = 0;
  };
  std::vector<Attention> attention;

  // Bytes a decode step reads with `context` visible cache slots.
  double decode_bytes(int64_t context) const;
  // Useful FLOPs of feeding `count` tokens starting at `start` (rows beyond count are padding).
  double flops(int64_t start, int64_t count) const;
};
MethodCost method_cost(const Program& program, const std::string& method);

// ---- the model benchmark ----------------------------------------------------------------

struct BenchOptions {
  std::string path;
  int64_t prompt = 128;  // -p
  int64_t gen = 64;      // -n
  int reps = 5;          // -r
  int threads = 0;       // -t (0: all hardware threads)
  uint64_t bandwidth_bytes = uint64_t(1) << 30;
  bool ceilings = true;
  RuntimeOptions runtime;  // how the program's methods run (filled from the environment by the CLI)
};

struct BenchResult {
  nlohmann::json json;  // everything, see docs/performance.md
};

// Loads the program, runs prefill and decode reps, then measures the ceilings (after the model,
// so the bandwidth buffer does not count in the model's peak RSS). Throws Error.
BenchResult run_bench(const BenchOptions& options);

}  // namespace hfstatic::bench
