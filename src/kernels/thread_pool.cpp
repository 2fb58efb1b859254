#include "kernels/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <system_error>

#include "kernels/parallel.h"
#include "kernels/scratch.h"
#include "util/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HFSTATIC_PAUSE() _mm_pause()
#else
#define HFSTATIC_PAUSE() std::this_thread::yield()
#endif

namespace hfstatic {

namespace {
thread_local ThreadPool* current_pool = nullptr;
thread_local bool inside_job = false;                       // set while a thread runs a chunk of a parallel range
thread_local std::span<const PrefetchRange> idle_prefetch;  // ScopedIdlePrefetch's ranges

// How long an idle worker spins before sleeping: long enough to bridge the gap between two
// parallel regions of one method run, short enough not to burn a core between runs.
constexpr auto kSpin = std::chrono::microseconds(2000);

struct JobScope {
  JobScope() { inside_job = true; }
  ~JobScope() { inside_job = false; }
};

// Prefetches `range` a few cache lines at a time for as long as keep_going() holds.
template <typename KeepGoing>
void prefetch_while(const PrefetchRange& range, KeepGoing&& keep_going) {
  constexpr size_t kLine = 64, kBatch = 16 * kLine;
  const char* p = static_cast<const char*>(range.data);
  for (size_t at = 0; at < range.bytes && keep_going(); at += kBatch)
    for (size_t b = at; b < std::min(range.bytes, at + kBatch); b += kLine) __builtin_prefetch(p + b);
}
}  // namespace

ThreadPool::ThreadPool(int threads) : stretches_(new Stretch[size_t(std::clamp(threads, 1, kMaxThreads))]) {
  if (threads > kMaxThreads) fail(threads, " threads requested; at most ", kMaxThreads, " are supported");
  workers_.reserve(size_t(std::max(0, threads - 1)));
  for (int i = 1; i < std::max(1, threads); ++i) {
    try {
      workers_.emplace_back([this, i] { worker_loop(i); });
    } catch (const std::system_error& e) {
      stop_workers();
      fail("cannot start compute thread ", i + 1, " of ", threads, ": ", e.what());
    }
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_.stopping.store(true, std::memory_order_release);
    job_.generation.fetch_add(1, std::memory_order_release);
  }
  start_cv_.notify_all();
  for (auto& w : workers_) w.join();
  workers_.clear();
}

int ThreadPool::hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

namespace {
uint64_t pack(int64_t begin, int64_t end) { return uint64_t(begin) << 32 | uint64_t(end); }
int64_t begin_of(uint64_t blocks) { return int64_t(blocks >> 32); }
int64_t end_of(uint64_t blocks) { return int64_t(blocks & 0xffffffffu); }

// Scheduling counts whole grains, which must fit a stretch's 32-bit bounds.
int64_t effective_grain(int64_t n, int64_t grain) {
  return std::max({int64_t(1), grain, (n + 0x7fffffff - 1) / 0x7fffffff});
}

// The blocks [begin, end) thread `slot` of `parts` owns at the start of a job of `blocks`.
std::pair<int64_t, int64_t> stretch(int64_t blocks, int parts, int slot) {
  return {blocks * slot / parts, blocks * (slot + 1) / parts};
}
}  // namespace

void ThreadPool::run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn,
                     std::span<const PrefetchRange> idle) {
  if (n <= 0) return;
  grain = effective_grain(n, grain);
  if (threads() == 1 || n < 2 * grain || inside_job) {
    fn(0, n);
    return;
  }
  std::unique_lock<std::mutex> run_lock(run_mutex_, std::try_to_lock);
  if (!run_lock.owns_lock()) {  // another thread is using the pool
    fn(0, n);
    return;
  }
  job_.fn = &fn;
  job_.workspace = kernels::detail::installed_workspace();
  job_.n = n;
  job_.grain = grain;
  const int64_t blocks = n / grain;  // the last block takes the remainder
  const int parts = threads();
  job_.blocks = blocks;
  for (int t = 0; t < parts; ++t) {  // published by the generation increment
    const auto [b, e] = stretch(blocks, parts, t);
    stretches_[size_t(t)].blocks.store(pack(b, e), std::memory_order_relaxed);
    stretches_[size_t(t)].idle = size_t(t) < idle.size() ? idle[size_t(t)] : PrefetchRange{};
  }
  // Every worker acknowledges every job (those without a chunk too), so none can still be
  // reading this job's fields when the next one is posted.
  pending_.store(threads() - 1, std::memory_order_relaxed);
  job_.generation.fetch_add(1, std::memory_order_seq_cst);
  if (job_.sleeping.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(mutex_);  // pairs with the sleeper's check under mutex_
    start_cv_.notify_all();
  }
  run_chunks(0);
  prefetch_while(stretches_[0].idle, [&] { return pending_.load(std::memory_order_acquire) != 0; });
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < 4096)
      HFSTATIC_PAUSE();
    else
      std::this_thread::yield();  // a worker may be descheduled (more threads than cores)
  }
  job_.fn = nullptr;
}

void ThreadPool::run_blocks(int64_t begin, int64_t end) {
  (*job_.fn)(begin * job_.grain, end == job_.blocks ? job_.n : end * job_.grain);
}

// Halving keeps the owner's chunks few and long while leaving the tail of its stretch to a
// thread that runs out of its own work (one slowed by other processes, or by slower memory).
void ThreadPool::run_chunks(int slot) {
  JobScope scope;
  std::atomic<uint64_t>& own = stretches_[size_t(slot)].blocks;
  for (uint64_t s = own.load(std::memory_order_relaxed);;) {
    const int64_t b = begin_of(s), e = end_of(s);
    if (b >= e) break;
    const int64_t take = std::max<int64_t>(1, (e - b) / 2);
    if (own.compare_exchange_weak(s, pack(b + take, e), std::memory_order_relaxed)) {
      run_blocks(b, b + take);
      s = own.load(std::memory_order_relaxed);
    }
  }
  const int parts = threads();
  while (true) {
    int victim = -1;
    uint64_t vs = 0;
    for (int t = 0; t < parts; ++t) {
      const uint64_t s = stretches_[size_t(t)].blocks.load(std::memory_order_relaxed);
      if (end_of(s) - begin_of(s) > (victim < 0 ? 0 : end_of(vs) - begin_of(vs))) victim = t, vs = s;
    }
    if (victim < 0) return;
    const int64_t b = begin_of(vs), e = end_of(vs), take = std::max<int64_t>(1, (e - b) / 2);
    if (stretches_[size_t(victim)].blocks.compare_exchange_strong(vs, pack(b, e - take), std::memory_order_relaxed))
      run_blocks(e - take, e);
  }
}

void ThreadPool::worker_loop(int slot) {
  uint64_t seen = 0;  // the generation when the pool was made: a job posted before this thread
                      // first runs is still seen as new
  while (true) {
    uint64_t g = job_.generation.load(std::memory_order_acquire);
    if (g == seen) {
      auto until = std::chrono::steady_clock::now() + kSpin;
      int spins = 0;
      while ((g = job_.generation.load(std::memory_order_acquire)) == seen) {
        if (++spins < 4096) {
          HFSTATIC_PAUSE();
          continue;
        }
        std::this_thread::yield();  // let a descheduled thread of the same job run
        if (std::chrono::steady_clock::now() > until) break;
      }
      if (g == seen) {
        std::unique_lock<std::mutex> lock(mutex_);
        job_.sleeping.fetch_add(1, std::memory_order_seq_cst);
        start_cv_.wait(lock,
                       [&] { return job_.stopping.load() || job_.generation.load(std::memory_order_seq_cst) != seen; });
        job_.sleeping.fetch_sub(1, std::memory_order_relaxed);
        g = job_.generation.load(std::memory_order_acquire);
      }
    }
    seen = g;
    if (job_.stopping.load(std::memory_order_acquire)) return;
    {
      const kernels::detail::WorkerScratch scratch(job_.workspace, slot);
      run_chunks(slot);
    }
    const PrefetchRange idle = stretches_[size_t(slot)].idle;  // the next job may overwrite it once we are done
    pending_.fetch_sub(1, std::memory_order_acq_rel);
    prefetch_while(idle, [&] { return job_.generation.load(std::memory_order_relaxed) == seen; });
  }
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (current_pool) {
    current_pool->run(n, grain, fn, idle_prefetch);
  } else if (n > 0) {
    fn(0, n);
  }
}

int parallel_threads() { return current_pool && !inside_job ? current_pool->threads() : 1; }

std::pair<int64_t, int64_t> owned_items(int64_t n, int64_t grain, int threads, int slot) {
  if (n <= 0 || slot < 0 || slot >= std::max(1, threads)) return {0, 0};
  grain = effective_grain(n, grain);
  if (threads <= 1 || n < 2 * grain)
    return slot == 0 ? std::pair<int64_t, int64_t>{0, n} : std::pair<int64_t, int64_t>{n, n};
  const int64_t blocks = n / grain;
  const auto [b, e] = stretch(blocks, threads, slot);
  return {b * grain, e == blocks ? n : e * grain};
}

ScopedIdlePrefetch::ScopedIdlePrefetch(std::span<const PrefetchRange> ranges) : previous_(idle_prefetch) {
  idle_prefetch = ranges;
}
ScopedIdlePrefetch::~ScopedIdlePrefetch() { idle_prefetch = previous_; }

ScopedThreadPool::ScopedThreadPool(ThreadPool* pool) : previous_(current_pool) { current_pool = pool; }
ScopedThreadPool::~ScopedThreadPool() { current_pool = previous_; }

}  // namespace hfstatic
