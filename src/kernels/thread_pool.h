// A persistent pool of worker threads that runs one parallel range at a time.
//
// Workers spin briefly on an atomic generation counter after each job before falling back to a
// condition variable, so the many short parallel regions of a decode step (one per matrix) cost
// about a microsecond each instead of a futex wake-up.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hfstatic {

class ThreadPool {
 public:
  // threads counts the calling thread: ThreadPool(1) runs everything inline.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return int(workers_.size()) + 1; }
  // Runs fn over contiguous chunks of [0, n) of at least `grain` items (all of [0, n) in one
  // chunk when n < 2 * grain). The threads take chunks until none is left, each half of an
  // equal share of what remains, so chunks shrink towards the end and the threads finish
  // together; returns when all finish. A call made from inside a running job, or while another
  // thread is using the pool, runs inline.
  void run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

  static int hardware_threads();

 private:
  void worker_loop();
  void run_chunks();  // takes chunks of the current job until none is left

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one run at a time
  std::mutex mutex_;      // pairs sleeping workers with the wake-up
  std::condition_variable start_cv_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_grain_ = 1;
  std::atomic<int64_t> next_item_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleeping_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace hfstatic
