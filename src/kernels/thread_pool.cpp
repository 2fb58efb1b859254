#include "kernels/thread_pool.h"

#include <algorithm>

#include "kernels/parallel.h"

namespace hfstatic {

namespace {
thread_local ThreadPool* current_pool = nullptr;

std::pair<int64_t, int64_t> chunk_range(int64_t n, int chunks, int index) {
  int64_t base = n / chunks, extra = n % chunks;
  int64_t begin = index * base + std::min<int64_t>(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}
}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(1, threads); ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  start_cv_.notify_all();
  for (auto& w : workers_) w.join();
}

int ThreadPool::hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

void ThreadPool::run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  int chunks = int(std::min<int64_t>(threads(), std::max<int64_t>(1, n / std::max<int64_t>(1, grain))));
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    job_chunks_ = chunks;
    pending_ = chunks - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  auto [b, e] = chunk_range(n, chunks, 0);
  fn(b, e);
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  while (true) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t n;
    int chunks;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_cv_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
      chunks = job_chunks_;
    }
    if (index < chunks) {
      auto [b, e] = chunk_range(n, chunks, index);
      (*job)(b, e);
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (current_pool) {
    current_pool->run(n, grain, fn);
  } else if (n > 0) {
    fn(0, n);
  }
}

ScopedThreadPool::ScopedThreadPool(ThreadPool* pool) : previous_(current_pool) { current_pool = pool; }
ScopedThreadPool::~ScopedThreadPool() { current_pool = previous_; }

}  // namespace hfstatic
