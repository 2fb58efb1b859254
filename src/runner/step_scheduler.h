// Continuous batching: the model steps of several runners on one shared ThreadPool, their
// decode steps gathered into one IOManager::decode_batch.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "io/io_manager.h"

namespace hfstatic {

class ThreadPool;

struct StepSchedulerOptions {
  int threads = 0;  // the shared pool's threads; 0: all hardware threads
  // How long a decode batch may wait for the managers whose step has just run and that have not
  // asked for their next step yet (their runners are sampling, or their threads are waking
  // up): a fraction of the last step's duration, and at least gather_at_least. Past it the
  // batch runs without them. gather_fraction 0: never waits.
  double gather_fraction = 0.25;
  std::chrono::microseconds gather_at_least{100};
  // Called after every decode step with its rows, on the thread that ran it (what it throws is
  // ignored).
  std::function<void(size_t rows)> on_decode_step;
};

// Runs the steps of every IOManager that asks, one step at a time, on one ThreadPool. The
// caller of step() blocks until its step has run; a caller that finds no step running and a
// step queued runs the next one itself (leader/follower: no thread of its own, no hand-off).
// The next step is chosen in arrival order: when the oldest queued step is a decode step, every
// queued decode step of the same batch key runs with it in one decode_batch (sequences join and
// leave between steps); any other step (a prefill chunk, a verify step) runs alone. A batch
// waits for no sequence that has not asked, except, for a bounded moment, those whose step has
// just run (gather_fraction). Each manager's logits and state come out bit for bit
// as its own step() leaves them. Errors stay with their step: a batch that decode_batch refuses
// runs its rows one by one, each getting its own result.
class StepScheduler {
 public:
  explicit StepScheduler(StepSchedulerOptions options = {});
  ~StepScheduler();  // no step may be queued or running
  StepScheduler(const StepScheduler&) = delete;
  StepScheduler& operator=(const StepScheduler&) = delete;

  // io.step(kind, start_pos, tokens, &pool()) run in turn: returns its Status, rethrows its
  // exception. A decode step of one token runs in a batch with the queued decode steps of the
  // same batch_key (managers that loaded one program with the same options, so that
  // decode_batch takes them together); every other step runs alone.
  Status step(IOManager& io, const void* batch_key, StepKind kind, int64_t start_pos, std::span<const int64_t> tokens);
  // io.verify(start_pos, tokens, &pool()) run in turn, alone (batch_key as for step()).
  Status verify(IOManager& io, const void* batch_key, int64_t start_pos, std::span<const int64_t> tokens);
  // `io` asks for no next step soon (its generation ended): batches stop waiting for it. Until
  // then, once a step of `io` has run, the next decode batch of its key waits briefly for its
  // next step (see StepSchedulerOptions::gather_fraction), unless it already missed one.
  void leave(const IOManager& io);

  // Between pause() and resume() steps queue but none starts (a test's way to make a batch of
  // known rows; queued() says how many wait).
  void pause();
  void resume();
  size_t queued() const;

  struct Stats {
    uint64_t decode_steps = 0;          // decode_batch calls and lone decode steps
    uint64_t decode_rows = 0;           // their rows
    uint64_t batched_decode_steps = 0;  // decode steps of more than one row
    uint64_t other_steps = 0;           // prefill and verify steps
    size_t max_decode_rows = 0;
  };
  Stats stats() const;
  ThreadPool& pool() { return *pool_; }
  int threads() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Request;
  // Queues `request` and blocks until it has run (running the steps before it when they wait
  // for a thread); rethrows its exception.
  Status submit(Request& request);
  // Whether the next step should still wait for rows of the last decode batch (under mutex_).
  bool gathering(Clock::time_point now) const;
  // Takes the next step's requests off the queue and runs them; `lock` (on mutex_) is released
  // while they run.
  void run_next(std::unique_lock<std::mutex>& lock);
  // Runs the requests of one step, each getting its Status or exception; never throws.
  void run(std::span<Request* const> requests);

  StepSchedulerOptions options_;
  std::unique_ptr<ThreadPool> pool_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Request*> queue_;  // oldest first
  bool stepping_ = false, paused_ = false;
  // Managers whose step has run and that have neither queued their next step nor left (nor
  // missed a decode batch of their key since), with their batch keys; until when the next
  // decode batch waits for those of its key.
  struct Returning {
    const IOManager* io;
    const void* batch_key;
  };
  std::vector<Returning> returning_;
  Clock::time_point gather_until_;
  Stats stats_;
};

}  // namespace hfstatic
