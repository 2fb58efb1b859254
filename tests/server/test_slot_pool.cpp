// The slot pool: immediate slots, a bounded FIFO queue, rejection past it, shutdown.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "server/slot_pool.h"

namespace hfstatic::server {
namespace {

using namespace std::chrono_literals;

// Polls `pred` for up to 5 s.
template <typename F>
bool eventually(F pred) {
  for (int i = 0; i < 500; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

TEST(SlotPool, ImmediateThenQueueThenFull) {
  SlotPool pool(2, 1);
  SlotPool::Outcome o;
  SlotLease a = pool.acquire(&o);
  ASSERT_TRUE(a);
  EXPECT_EQ(o, SlotPool::Outcome::Acquired);
  SlotLease b = pool.acquire(&o);
  ASSERT_TRUE(b);
  EXPECT_NE(a.index(), b.index());
  EXPECT_EQ(pool.busy(), 2u);

  std::atomic<bool> got{false};
  size_t got_index = 99;
  std::thread waiter([&] {
    SlotLease c = pool.acquire();
    got_index = c.index();
    got = bool(c);
  });
  ASSERT_TRUE(eventually([&] { return pool.waiting() == 1; }));
  SlotLease d = pool.acquire(&o);  // queue full
  EXPECT_FALSE(d);
  EXPECT_EQ(o, SlotPool::Outcome::QueueFull);
  EXPECT_FALSE(got);
  const size_t freed = b.index();
  b.release();
  waiter.join();
  EXPECT_TRUE(got);
  EXPECT_EQ(got_index, freed);
  EXPECT_EQ(pool.busy(), 1u);  // the waiter's lease ended with its thread
  EXPECT_EQ(pool.waiting(), 0u);
}

TEST(SlotPool, ZeroQueueRejectsAtOnce) {
  SlotPool pool(1, 0);
  SlotLease a = pool.acquire();
  SlotPool::Outcome o;
  EXPECT_FALSE(pool.acquire(&o));
  EXPECT_EQ(o, SlotPool::Outcome::QueueFull);
  a = SlotLease();
  EXPECT_TRUE(pool.acquire());
}

TEST(SlotPool, FirstComeFirstServed) {
  SlotPool pool(1, 3);
  SlotLease held = pool.acquire();
  std::vector<int> order;
  std::mutex m;
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      SlotLease l = pool.acquire();
      std::lock_guard<std::mutex> lock(m);
      order.push_back(i);
    });
    ASSERT_TRUE(eventually([&] { return pool.waiting() == size_t(i + 1); }));
  }
  held.release();
  for (auto& t : threads) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

// A waiter handed the slot that was given back stays in the queue until its thread wakes; a
// request arriving in between (the holder asking again at once) must queue, not be refused as
// if the queue were full.
TEST(SlotPool, AWaiterHandedAFreeSlotLeavesItsQueuePlace) {
  for (int round = 0; round < 200; ++round) {
    SlotPool pool(1, 1);
    SlotLease held = pool.acquire();
    std::thread waiter([&] {
      SlotLease lease = pool.acquire();
      EXPECT_TRUE(lease);
    });
    ASSERT_TRUE(eventually([&] { return pool.waiting() == 1; }));
    held.release();
    SlotPool::Outcome o = SlotPool::Outcome::TimedOut;
    SlotLease again = pool.acquire(&o, 5s);
    waiter.join();
    ASSERT_EQ(o, SlotPool::Outcome::Acquired) << "round " << round;
    EXPECT_TRUE(again);
  }
}

TEST(SlotPool, TimeoutAndShutdown) {
  SlotPool pool(1, 2);
  SlotLease held = pool.acquire();
  SlotPool::Outcome o;
  EXPECT_FALSE(pool.acquire(&o, 30ms));
  EXPECT_EQ(o, SlotPool::Outcome::TimedOut);
  EXPECT_EQ(pool.waiting(), 0u);
  SlotPool::Outcome wo = SlotPool::Outcome::Acquired;
  std::thread waiter([&] { EXPECT_FALSE(pool.acquire(&wo)); });
  ASSERT_TRUE(eventually([&] { return pool.waiting() == 1; }));
  pool.shutdown();
  waiter.join();
  EXPECT_EQ(wo, SlotPool::Outcome::ShutDown);
  EXPECT_FALSE(pool.acquire(&o));
  EXPECT_EQ(o, SlotPool::Outcome::ShutDown);
}

TEST(SlotPool, MovedLeaseReleasesOnce) {
  SlotPool pool(1, 0);
  SlotLease a = pool.acquire();
  SlotLease b = std::move(a);
  EXPECT_FALSE(a);
  EXPECT_TRUE(b);
  EXPECT_EQ(pool.busy(), 1u);
  b.release();
  b.release();
  EXPECT_EQ(pool.busy(), 0u);
}

}  // namespace
}  // namespace hfstatic::server
