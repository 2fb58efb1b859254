// Admission control of the server: N slots, and a bounded first-come-first-served queue of
// requests waiting for one. Knows nothing of runners: a lease names a slot index.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

namespace hfstatic::server {

class SlotPool;

// Holds one slot until destroyed (or release()); move-only.
class SlotLease {
 public:
  SlotLease() = default;
  SlotLease(SlotLease&& other) noexcept;
  SlotLease& operator=(SlotLease&& other) noexcept;
  SlotLease(const SlotLease&) = delete;
  SlotLease& operator=(const SlotLease&) = delete;
  ~SlotLease() { release(); }

  explicit operator bool() const { return pool_ != nullptr; }
  size_t index() const { return index_; }
  void release();

 private:
  friend class SlotPool;
  SlotLease(SlotPool* pool, size_t index) : pool_(pool), index_(index) {}
  SlotPool* pool_ = nullptr;
  size_t index_ = 0;
};

class SlotPool {
 public:
  SlotPool(size_t slots, size_t max_queue);
  ~SlotPool();

  enum class Outcome { Acquired, QueueFull, TimedOut, ShutDown };
  // Takes a free slot at once when one is free and nobody waits; otherwise waits in the queue
  // (in arrival order) when it has room, for at most `max_wait`. An empty lease comes back with
  // the reason when the queue is full, the wait timed out, or the pool shut down.
  // `preference(index)`, when given, ranks the free slots (called under the pool's lock, only
  // for free slots): the highest wins; among slots ranked 0 the one free the longest wins (its
  // history is the least likely to be wanted again), among others the one freed last.
  using Preference = std::function<size_t(size_t)>;
  SlotLease acquire(Outcome* outcome = nullptr, std::chrono::milliseconds max_wait = std::chrono::hours(24),
                    const Preference& preference = {});
  // Wakes every waiter with ShutDown and refuses later acquires.
  void shutdown();

  size_t slots() const { return slots_; }
  size_t max_queue() const { return max_queue_; }
  size_t busy() const;
  size_t waiting() const;

 private:
  friend class SlotLease;
  void give_back(size_t index);
  size_t take_free(const Preference& preference);  // under mutex_, with free_ not empty

  const size_t slots_, max_queue_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<size_t> free_;    // free slot indices, freed last at the back (at first: lowest last)
  std::deque<uint64_t> queue_;  // tickets of waiting requests, oldest first
  uint64_t next_ticket_ = 0;
  bool shut_down_ = false;
};

}  // namespace hfstatic::server
