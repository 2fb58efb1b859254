// The fixed cost of a parallel region on the thread pool: what each of a decode step's regions
// (one per matrix-vector product and attention) pays to hand its work to the other threads and
// wait for them. Prints microseconds a region, the fastest of several passes; not a test.
//
//   bench_parallel_region [--threads 2,4] [--regions 100000] [--passes 5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench.h"
#include "bench_args.h"
#include "kernels/parallel.h"
#include "kernels/thread_pool.h"

namespace hfstatic {
namespace {

using Clock = std::chrono::steady_clock;

// Microseconds a region of the fastest of `passes` passes of `regions` regions running fn.
template <typename Fn>
double per_region(int regions, int passes, Fn&& fn) {
  double best = 1e30;
  for (int p = 0; p < passes; ++p) {
    const auto t0 = Clock::now();
    for (int i = 0; i < regions; ++i) fn();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best / regions * 1e6;
}

int run(int argc, char** argv) {
  std::vector<int> threads = {2};
  int regions = 100000, passes = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--threads") {
      threads = bench_args::int_list(v);
    } else if (a == "--regions") {
      regions = std::max(1, std::atoi(v.c_str()));
    } else if (a == "--passes") {
      passes = std::max(1, std::atoi(v.c_str()));
    }
  }
  std::printf("%-8s %14s %22s\n", "threads", "empty region", "one item per thread");
  for (int t : threads) {
    ThreadPool pool(std::max(1, t));
    ScopedThreadPool scope(&pool);
    const double empty = bench::region_handover_us(&pool, regions, passes);
    // Each item ~1 us of dependent additions on its thread.
    const double work = per_region(regions / 10, passes, [&] {
      parallel_for(pool.threads(), 1, [&](int64_t b, int64_t e) {
        volatile double x = 0;
        for (int64_t k = 0; k < (e - b) * 300; ++k) x = x + 1.0;
      });
    });
    const double alone = per_region(regions / 10, passes, [&] {
      volatile double x = 0;
      for (int k = 0; k < 300; ++k) x = x + 1.0;
    });
    std::printf("%-8d %11.3f us %12.3f us (item alone %.3f us)\n", pool.threads(), empty, work, alone);
  }
  return 0;
}

}  // namespace
}  // namespace hfstatic

int main(int argc, char** argv) { return hfstatic::run(argc, argv); }
