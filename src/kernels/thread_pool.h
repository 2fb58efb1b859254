// A persistent pool of worker threads that runs one parallel range at a time.
#pragma once
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
  // Splits [0, n) into at most threads() contiguous chunks and runs them; returns when all finish.
  void run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

  static int hardware_threads();

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int job_chunks_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stopping_ = false;
};

}  // namespace hfstatic
