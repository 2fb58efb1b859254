// Work splitting for kernels. A kernel calls parallel_for over independent index ranges; the
// executor installs the thread pool for the duration of a method run.
#pragma once
#include <cstdint>
#include <functional>

namespace hfstatic {

class ThreadPool;

// Calls fn(begin, end) over disjoint ranges covering [0, n), possibly concurrently on the
// current thread pool; `grain` is the smallest range worth a task.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Threads a parallel_for issued here would use (1 inside a job or without a pool).
int parallel_threads();

// Installs `pool` for parallel_for calls made on this thread while the guard lives.
class ScopedThreadPool {
 public:
  explicit ScopedThreadPool(ThreadPool* pool);
  ~ScopedThreadPool();

 private:
  ThreadPool* previous_;
};

}  // namespace hfstatic
