// The fixed cost of a parallel region on the thread pool: what each of a decode step's regions
// (one per matrix-vector product and attention) pays to hand its work to the other threads and
// wait for them. Prints microseconds a region, the fastest of several passes; not a test.
//
//   bench_parallel_region [--threads 2,4] [--regions 100000] [--passes 5]
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench.h"
#include "bench_args.h"
#include "kernels/parallel.h"
#include "kernels/thread_pool.h"

namespace hfstatic {
namespace {

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
    auto items = [](int64_t count) {
      volatile double x = 0;
      for (int64_t k = 0; k < count * 300; ++k) x = x + 1.0;
    };
    const double work = bench::fastest_us_per_call(std::max(1, regions / 10), passes, [&] {
      parallel_for(pool.threads(), 1, [&](int64_t b, int64_t e) { items(e - b); });
    });
    const double alone = bench::fastest_us_per_call(std::max(1, regions / 10), passes, [&] { items(1); });
    std::printf("%-8d %11.3f us %12.3f us (item alone %.3f us)\n", pool.threads(), empty, work, alone);
  }
  return 0;
}

}  // namespace
}  // namespace hfstatic

int main(int argc, char** argv) { return hfstatic::run(argc, argv); }
