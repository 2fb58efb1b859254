// The persistent thread pool and parallel_for: exact coverage, repetition, nesting.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/error.h"

#include "kernels/parallel.h"
#include "kernels/thread_pool.h"

namespace hfstatic {
namespace {

// Runs parallel_for(n, grain) and checks that every index is visited exactly once.
void expect_exact_cover(ThreadPool* pool, int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> hits(size_t(std::max<int64_t>(n, 1)));
  for (auto& h : hits) h = 0;
  std::atomic<int> calls{0};
  ScopedThreadPool scope(pool);
  parallel_for(n, grain, [&](int64_t b, int64_t e) {
    ASSERT_LE(0, b);
    ASSERT_LE(b, e);
    ASSERT_LE(e, n);
    ++calls;
    for (int64_t i = b; i < e; ++i) ++hits[size_t(i)];
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "index " << i << " of " << n;
  if (n <= 0) {
    EXPECT_EQ(calls.load(), 0);
  } else {
    EXPECT_LE(calls.load(), std::max<int64_t>(1, n / grain));  // no chunk below a grain
  }
}

TEST(ThreadPool, CoversRangesExactlyOnce) {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (int64_t n : {0, 1, 2, 3, 5, 7, 16, 17, 100, 1000, 12345})
      for (int64_t grain : {1, 2, 16, 1000}) expect_exact_cover(&pool, n, grain);
  }
  expect_exact_cover(nullptr, 77, 1);  // no pool: inline
}

TEST(ThreadPool, UsesSeveralThreadsWhenWorthIt) {
  ThreadPool pool(2);
  ScopedThreadPool scope(&pool);
  std::mutex m;
  std::vector<std::thread::id> ids;
  // Chunks slow enough that the worker wakes before the caller has taken them all.
  parallel_for(1000, 1, [&](int64_t, int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::lock_guard<std::mutex> lock(m);
    ids.push_back(std::this_thread::get_id());
  });
  EXPECT_EQ(std::set<std::thread::id>(ids.begin(), ids.end()).size(), 2u);
  // Below two grains the range runs as one chunk.
  ids.clear();
  parallel_for(10, 8, [&](int64_t b, int64_t e) {
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 10);
    ids.push_back(std::this_thread::get_id());
  });
  EXPECT_EQ(ids.size(), 1u);
}

TEST(ThreadPool, AFreeThreadTakesTheChunksOfABusyOne) {
  ThreadPool pool(2);
  ScopedThreadPool scope(&pool);
  const std::thread::id caller = std::this_thread::get_id();
  std::mutex m;
  std::vector<std::thread::id> ids;
  // The first chunk the caller takes is slow; the worker meanwhile takes all the others (all of
  // them, when the caller's thread starts late on a loaded machine).
  bool caller_slept = false;
  parallel_for(8, 1, [&](int64_t, int64_t) {
    if (std::this_thread::get_id() == caller && !caller_slept) {
      caller_slept = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    std::lock_guard<std::mutex> lock(m);
    ids.push_back(std::this_thread::get_id());
  });
  EXPECT_LE(std::count(ids.begin(), ids.end(), caller), 1);
  EXPECT_GE(std::count_if(ids.begin(), ids.end(), [&](std::thread::id id) { return id != caller; }), 1);
}

// Each thread owns an equal stretch and walks it front to back in one sequential stream; a
// thread out of work takes the rest of another's stretch from its end.
TEST(ThreadPool, EachThreadWalksItsStretchThenTakesFromTheEndOfAnother) {
  ThreadPool pool(2);
  ScopedThreadPool scope(&pool);
  const std::thread::id caller = std::this_thread::get_id();
  std::mutex m;
  std::vector<std::pair<int64_t, int64_t>> caller_chunks, worker_chunks;
  std::atomic<int64_t> worker_items{0};
  parallel_for(1000, 10, [&](int64_t b, int64_t e) {
    if (std::this_thread::get_id() != caller) {
      {
        std::lock_guard<std::mutex> lock(m);
        worker_chunks.emplace_back(b, e);
      }
      worker_items += e - b;
      return;
    }
    {
      std::lock_guard<std::mutex> lock(m);
      caller_chunks.emplace_back(b, e);
    }
    // Hold the caller in its first chunk until the worker has done everything else.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (worker_items.load() < 1000 - (e - b) && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  ASSERT_EQ(caller_chunks.size(), 1u);
  EXPECT_EQ(caller_chunks[0], std::make_pair(int64_t(0), int64_t(250)));  // half its stretch [0, 500)
  ASSERT_FALSE(worker_chunks.empty());
  EXPECT_EQ(worker_chunks.front().first, 500);  // the worker's stretch is [500, 1000)
  EXPECT_EQ(owned_items(1000, 10, 2, 0), std::make_pair(int64_t(0), int64_t(500)));
  EXPECT_EQ(owned_items(1000, 10, 2, 1), std::make_pair(int64_t(500), int64_t(1000)));
  size_t i = 1;
  for (; i < worker_chunks.size() && worker_chunks[i - 1].second != 1000; ++i)
    EXPECT_EQ(worker_chunks[i].first, worker_chunks[i - 1].second) << "chunk " << i;
  ASSERT_LT(i, worker_chunks.size()) << "the worker never took from the caller's stretch";
  EXPECT_EQ(worker_chunks[i].second, 500);  // then the caller's rest, from its end
  for (++i; i < worker_chunks.size(); ++i)
    EXPECT_EQ(worker_chunks[i].second, worker_chunks[i - 1].first) << "chunk " << i;
  EXPECT_EQ(worker_chunks.back().first, 250);
  for (auto [b, e] : worker_chunks) EXPECT_EQ(b % 10, 0) << "chunks are whole grains";
}

// owned_items tells where each thread starts, for what it may prefetch before a region.
TEST(ThreadPool, OwnedItemsSplitTheRangeInWholeGrains) {
  for (int threads : {1, 2, 3, 5})
    for (int64_t n : {1, 7, 63, 64, 127, 128, 1000, 12345})
      for (int64_t grain : {1, 16, 64}) {
        SCOPED_TRACE(testing::Message() << threads << " threads, n " << n << ", grain " << grain);
        int64_t at = 0;
        for (int slot = 0; slot < threads; ++slot) {
          const auto [b, e] = owned_items(n, grain, threads, slot);
          EXPECT_EQ(b, at) << "slot " << slot;
          EXPECT_LE(b, e);
          if (e < n) {
            EXPECT_EQ(e % grain, 0) << "slot " << slot;
          }
          at = e;
        }
        EXPECT_EQ(at, n);
      }
  // One thread, or under two grains: all of it is the calling thread's, as run() runs it inline.
  EXPECT_EQ(owned_items(100, 64, 2, 0), std::make_pair(int64_t(0), int64_t(100)));
  EXPECT_EQ(owned_items(100, 64, 2, 1), std::make_pair(int64_t(100), int64_t(100)));
  EXPECT_EQ(owned_items(300, 64, 1, 0), std::make_pair(int64_t(0), int64_t(300)));
  // Blocks of 64 over 3 threads: 4 blocks split 1, 1, 2; the last takes the remainder.
  EXPECT_EQ(owned_items(300, 64, 3, 0), std::make_pair(int64_t(0), int64_t(64)));
  EXPECT_EQ(owned_items(300, 64, 3, 1), std::make_pair(int64_t(64), int64_t(128)));
  EXPECT_EQ(owned_items(300, 64, 3, 2), std::make_pair(int64_t(128), int64_t(300)));
  EXPECT_EQ(owned_items(300, 64, 3, 3), std::make_pair(int64_t(0), int64_t(0)));  // no such slot
  EXPECT_EQ(owned_items(0, 64, 2, 0), std::make_pair(int64_t(0), int64_t(0)));
}

// Threads that run out of work prefetch their idle range until the job is done (the caller) or
// the next one starts (a worker); ranges far longer than that time, missing ones and none at
// all leave every job's result exact and the pool able to stop.
TEST(ThreadPool, IdlePrefetchEndsWithTheJob) {
  std::vector<char> memory(size_t(1) << 20);
  const PrefetchRange whole{memory.data(), memory.size()};
  const PrefetchRange long_range{memory.data(), size_t(1) << 30};  // prefetching cannot fault
  const std::vector<PrefetchRange> plans[] = {{}, {whole}, {whole, whole}, {long_range, long_range, long_range}};
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    ScopedThreadPool scope(&pool);
    for (int round = 0; round < 50; ++round) {
      const std::vector<PrefetchRange>& plan = plans[size_t(round) % std::size(plans)];
      ScopedIdlePrefetch idle(plan);
      expect_exact_cover(&pool, 1000 + round, 7);
    }
  }
}

TEST(ThreadPool, ManyRepeatedRuns) {
  ThreadPool pool(2);
  ScopedThreadPool scope(&pool);
  int64_t total = 0;
  for (int rep = 0; rep < 20000; ++rep) {
    std::atomic<int64_t> sum{0};
    parallel_for(64, 1, [&](int64_t b, int64_t e) {
      int64_t s = 0;
      for (int64_t i = b; i < e; ++i) s += i;
      sum += s;
    });
    total += sum.load();
  }
  EXPECT_EQ(total, int64_t(20000) * (63 * 64 / 2));
}

TEST(ThreadPool, RunsAfterWorkersFellAsleep) {
  ThreadPool pool(2);
  ScopedThreadPool scope(&pool);
  for (int rep = 0; rep < 3; ++rep) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the spin window
    expect_exact_cover(&pool, 1000, 1);
  }
}

TEST(ThreadPool, NestedParallelForRunsInline) {
  ThreadPool pool(2);
  ScopedThreadPool scope(&pool);
  std::vector<std::atomic<int>> hits(100 * 50);
  for (auto& h : hits) h = 0;
  parallel_for(100, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      parallel_for(50, 1, [&](int64_t b2, int64_t e2) {
        EXPECT_EQ(parallel_threads(), 1);
        for (int64_t j = b2; j < e2; ++j) ++hits[size_t(i * 50 + j)];
      });
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(ThreadPool, SharedByTwoCallerThreads) {
  ThreadPool pool(2);
  auto work = [&] {
    for (int rep = 0; rep < 2000; ++rep) expect_exact_cover(&pool, 257, 1);
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
}

TEST(ThreadPool, ParallelThreads) {
  EXPECT_EQ(parallel_threads(), 1);
  ThreadPool pool(2);
  ScopedThreadPool scope(&pool);
  EXPECT_EQ(parallel_threads(), 2);
}

}  // namespace
}  // namespace hfstatic

namespace hfstatic {
namespace {

TEST(ThreadPoolLimits, TooManyThreadsIsAnError) {
  try {
    ThreadPool pool(ThreadPool::kMaxThreads + 1);
    ADD_FAILURE() << "accepted " << pool.threads() << " threads";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), testing::HasSubstr("at most 256 are supported"));
  }
}

TEST(ThreadPoolLimits, AThreadThatCannotStartIsAnErrorNotAHang) {
#if defined(HFSTATIC_TEST_UNDER_SANITIZER)
  GTEST_SKIP() << "the sanitizers' shadow memory needs more address space than any small RLIMIT_AS";
#endif
  // In a child with little address space, thread stacks (8 MiB each) soon cannot be mapped.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::alarm(30);  // a deadlock ends in SIGALRM
    struct rlimit limit {};
    ::getrlimit(RLIMIT_AS, &limit);
    limit.rlim_cur = rlim_t(256) << 20;
    if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(3);
    try {
      ThreadPool pool(ThreadPool::kMaxThreads);
      ::_exit(2);  // every thread started: the limit did not bite
    } catch (const Error& e) {
      ::_exit(std::string(e.what()).find("cannot start compute thread") != std::string::npos ? 0 : 1);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  if (WEXITSTATUS(status) == 2 || WEXITSTATUS(status) == 3) GTEST_SKIP() << "the address-space limit did not bite here";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace hfstatic
