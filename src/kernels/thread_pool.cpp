#include "kernels/thread_pool.h"

#include <algorithm>
#include <chrono>

#include "kernels/parallel.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HFSTATIC_PAUSE() _mm_pause()
#else
#define HFSTATIC_PAUSE() std::this_thread::yield()
#endif

namespace hfstatic {

namespace {
thread_local ThreadPool* current_pool = nullptr;
thread_local bool inside_job = false;  // set while a thread runs a chunk of a parallel range

// How long an idle worker spins before sleeping: long enough to bridge the gap between two
// parallel regions of one method run, short enough not to burn a core between runs.
constexpr auto kSpin = std::chrono::microseconds(2000);

struct JobScope {
  JobScope() { inside_job = true; }
  ~JobScope() { inside_job = false; }
};
}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(1, threads); ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_release);
  }
  start_cv_.notify_all();
  for (auto& w : workers_) w.join();
}

int ThreadPool::hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

void ThreadPool::run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (threads() == 1 || n < 2 * grain || inside_job) {
    fn(0, n);
    return;
  }
  std::unique_lock<std::mutex> run_lock(run_mutex_, std::try_to_lock);
  if (!run_lock.owns_lock()) {  // another thread is using the pool
    fn(0, n);
    return;
  }
  job_ = &fn;
  job_n_ = n;
  job_grain_ = grain;
  next_item_.store(0, std::memory_order_relaxed);  // published by the generation increment
  // Every worker acknowledges every job (those without a chunk too), so none can still be
  // reading this job's fields when the next one is posted.
  pending_.store(threads() - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(mutex_);  // pairs with the sleeper's check under mutex_
    start_cv_.notify_all();
  }
  run_chunks();
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < 4096) HFSTATIC_PAUSE();
    else std::this_thread::yield();  // a worker may be descheduled (more threads than cores)
  }
  job_ = nullptr;
}

// Guided scheduling: each take is half of an equal share of what is left (at least a grain), so
// chunks start large and shrink towards the end, where the threads finish close together. A
// thread slowed down (by other processes, or by slower memory) simply takes fewer.
void ThreadPool::run_chunks() {
  JobScope scope;
  const int64_t parts = 2 * int64_t(threads());
  int64_t begin = next_item_.load(std::memory_order_relaxed), size = 0;
  while (true) {
    do {
      if (begin >= job_n_) return;
      const int64_t left = job_n_ - begin;
      size = std::max(job_grain_, left / parts);
      if (left - size < job_grain_) size = left;  // no remainder below a grain
    } while (!next_item_.compare_exchange_weak(begin, begin + size, std::memory_order_relaxed));
    (*job_)(begin, begin + size);
    begin = next_item_.load(std::memory_order_relaxed);
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;  // the generation when the pool was made: a job posted before this thread
                      // first runs is still seen as new
  while (true) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    if (g == seen) {
      auto until = std::chrono::steady_clock::now() + kSpin;
      int spins = 0;
      while ((g = generation_.load(std::memory_order_acquire)) == seen) {
        if (++spins < 4096) {
          HFSTATIC_PAUSE();
          continue;
        }
        std::this_thread::yield();  // let a descheduled thread of the same job run
        if (std::chrono::steady_clock::now() > until) break;
      }
      if (g == seen) {
        std::unique_lock<std::mutex> lock(mutex_);
        sleeping_.fetch_add(1, std::memory_order_seq_cst);
        start_cv_.wait(lock, [&] { return stopping_.load() || generation_.load(std::memory_order_seq_cst) != seen; });
        sleeping_.fetch_sub(1, std::memory_order_relaxed);
        g = generation_.load(std::memory_order_acquire);
      }
    }
    seen = g;
    if (stopping_.load(std::memory_order_acquire)) return;
    run_chunks();
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (current_pool) {
    current_pool->run(n, grain, fn);
  } else if (n > 0) {
    fn(0, n);
  }
}

int parallel_threads() { return current_pool && !inside_job ? current_pool->threads() : 1; }

ScopedThreadPool::ScopedThreadPool(ThreadPool* pool) : previous_(current_pool) { current_pool = pool; }
ScopedThreadPool::~ScopedThreadPool() { current_pool = previous_; }

}  // namespace hfstatic
