// Work splitting for kernels. A kernel calls parallel_for over independent index ranges; the
// executor installs the thread pool for the duration of a method run.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>

namespace hfstatic {

class ThreadPool;

// Calls fn(begin, end) over disjoint ranges covering [0, n), possibly concurrently on the
// current thread pool; `grain` is the smallest range worth a task.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Threads a parallel_for issued here would use (1 inside a job or without a pool).
int parallel_threads();

// The items [begin, end) of [0, n) that thread `slot` of `threads` owns at the start of a
// parallel_for with this grain (it walks them front to back before helping the others).
std::pair<int64_t, int64_t> owned_items(int64_t n, int64_t grain, int threads, int slot);

// Memory a thread pulls toward its caches while it waits for the other threads at the end of a
// parallel region: the start of what it will read in the next region.
struct PrefetchRange {
  const void* data = nullptr;
  size_t bytes = 0;
};

// While this guard lives, each parallel region issued on this thread ends with thread `slot`
// prefetching ranges[slot] while it waits for the slowest thread (a worker goes on until the
// next region starts). Ranges it has no entry for, and regions run inline, prefetch nothing.
class ScopedIdlePrefetch {
 public:
  explicit ScopedIdlePrefetch(std::span<const PrefetchRange> ranges);
  ~ScopedIdlePrefetch();
  ScopedIdlePrefetch(const ScopedIdlePrefetch&) = delete;
  ScopedIdlePrefetch& operator=(const ScopedIdlePrefetch&) = delete;

 private:
  std::span<const PrefetchRange> previous_;
};

// Installs `pool` for parallel_for calls made on this thread while the guard lives.
class ScopedThreadPool {
 public:
  explicit ScopedThreadPool(ThreadPool* pool);
  ~ScopedThreadPool();

 private:
  ThreadPool* previous_;
};

}  // namespace hfstatic
