#include "server/slot_pool.h"

#include <algorithm>

#include "util/error.h"

namespace hfstatic::server {

SlotLease::SlotLease(SlotLease&& other) noexcept : pool_(other.pool_), index_(other.index_) { other.pool_ = nullptr; }

SlotLease& SlotLease::operator=(SlotLease&& other) noexcept {
  if (this != &other) {
    release();
    pool_ = other.pool_;
    index_ = other.index_;
    other.pool_ = nullptr;
  }
  return *this;
}

void SlotLease::release() {
  if (pool_) pool_->give_back(index_);
  pool_ = nullptr;
}

SlotPool::SlotPool(size_t slots, size_t max_queue) : slots_(slots), max_queue_(max_queue) {
  if (slots == 0) fail("the server needs at least one slot");
  for (size_t i = slots; i-- > 0;) free_.push_back(i);
}

SlotPool::~SlotPool() { shutdown(); }

size_t SlotPool::take_free(const Preference& preference) {
  size_t pick = free_.size() - 1, best = 0;
  if (preference) {
    pick = 0;  // free the longest: taken when every slot ranks 0
    for (size_t i = free_.size(); i-- > 0;) {
      const size_t rank = preference(free_[i]);
      if (rank > best) best = rank, pick = i;
    }
  }
  const size_t index = free_[pick];
  free_.erase(free_.begin() + std::ptrdiff_t(pick));
  return index;
}

SlotLease SlotPool::acquire(Outcome* outcome, std::chrono::milliseconds max_wait, const Preference& preference) {
  auto set = [&](Outcome o) {
    if (outcome) *outcome = o;
  };
  std::unique_lock<std::mutex> lock(mutex_);
  if (shut_down_) {
    set(Outcome::ShutDown);
    return {};
  }
  if (!free_.empty() && queue_.empty()) {
    const size_t index = take_free(preference);
    set(Outcome::Acquired);
    return SlotLease(this, index);
  }
  // A waiter handed a free slot stays in queue_ until its thread wakes: only the waiters beyond
  // the free slots take places in the queue.
  if (queue_.size() >= max_queue_ + free_.size()) {
    set(Outcome::QueueFull);
    return {};
  }
  const uint64_t ticket = next_ticket_++;
  queue_.push_back(ticket);
  const auto deadline = std::chrono::steady_clock::now() + max_wait;
  const bool ready =
      cv_.wait_until(lock, deadline, [&] { return shut_down_ || (!free_.empty() && queue_.front() == ticket); });
  queue_.erase(std::find(queue_.begin(), queue_.end(), ticket));
  if (!ready || shut_down_) {
    cv_.notify_all();  // the next in line may be able to go now
    set(shut_down_ ? Outcome::ShutDown : Outcome::TimedOut);
    return {};
  }
  const size_t index = take_free(preference);
  cv_.notify_all();  // the next in line, when another slot is free
  set(Outcome::Acquired);
  return SlotLease(this, index);
}

void SlotPool::give_back(size_t index) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(index);
  }
  cv_.notify_all();
}

void SlotPool::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shut_down_ = true;
  }
  cv_.notify_all();
}

size_t SlotPool::busy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return slots_ - free_.size();
}

size_t SlotPool::waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

}  // namespace hfstatic::server
