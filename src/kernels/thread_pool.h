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
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/parallel.h"

namespace hfstatic {

namespace kernels {
class Workspace;  // scratch.h
}

class ThreadPool {
 public:
  // More would only add overhead on any machine this runs on, and each costs a stack.
  static constexpr int kMaxThreads = 256;
  // threads counts the calling thread: ThreadPool(1) runs everything inline. Throws Error when
  // threads exceeds kMaxThreads or a thread cannot be started (the ones started are stopped).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return int(workers_.size()) + 1; }
  // Runs fn over contiguous chunks of [0, n), each a whole number of grains (all of [0, n) in
  // one chunk when n < 2 * grain), and returns when all are done. Each thread owns an equal
  // stretch of the range and walks it from the front, taking half of what it has left at a
  // time, so its chunks are one sequential stream (what the hardware prefetcher wants); a thread
  // that finishes takes half of what the busiest other thread has left, from the back. A call
  // made from inside a running job, or while another thread is using the pool, runs inline.
  // Thread s, once it has no chunk left to take, prefetches idle[s] (if given) until the job
  // is done (the calling thread) or the next job starts (a worker).
  void run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn,
           std::span<const PrefetchRange> idle = {});

  static int hardware_threads();

 private:
  void stop_workers();
  // A thread's stretch of the current job, in grains: [begin, end) packed as begin << 32 | end,
  // and what it prefetches once it has no chunk left: the line a worker takes its work from.
  struct alignas(64) Stretch {
    std::atomic<uint64_t> blocks{0};
    PrefetchRange idle;
  };
  // What the calling thread posts, on the line a worker spins on: the job and its generation.
  struct alignas(64) Job {
    std::atomic<uint64_t> generation{0};
    const std::function<void(int64_t, int64_t)>* fn = nullptr;
    kernels::Workspace* workspace = nullptr;  // the caller's: each thread uses its slot
    int64_t n = 0, grain = 1, blocks = 0;
    std::atomic<int> sleeping{0};
    std::atomic<bool> stopping{false};
  };
  void worker_loop(int slot);
  void run_chunks(int slot);  // walks the slot's stretch, then takes from the others' ends
  void run_blocks(int64_t begin, int64_t end);

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one run at a time
  std::mutex mutex_;      // pairs sleeping workers with the wake-up
  std::condition_variable start_cv_;
  Job job_;
  std::unique_ptr<Stretch[]> stretches_;     // one per thread; slot 0 is the calling thread
  alignas(64) std::atomic<int> pending_{0};  // workers yet to finish the job, on a line of its own
};

}  // namespace hfstatic
