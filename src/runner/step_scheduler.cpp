#include "runner/step_scheduler.h"

#include <algorithm>
#include <exception>

#include "kernels/thread_pool.h"

namespace hfstatic {

struct StepScheduler::Request {
  Request(IOManager& io, const void* batch_key, StepKind kind, bool verify, int64_t start_pos,
          std::span<const int64_t> tokens)
      : io(&io), batch_key(batch_key), kind(kind), verify(verify), start_pos(start_pos), tokens(tokens) {}

  IOManager* io;
  const void* batch_key;
  StepKind kind;
  bool verify;
  int64_t start_pos;
  std::span<const int64_t> tokens;
  bool done = false;
  Status status;
  std::exception_ptr error;

  bool batchable() const { return !verify && kind == StepKind::Decode && tokens.size() == 1; }
};

StepScheduler::StepScheduler(StepSchedulerOptions options)
    : options_(std::move(options)),
      pool_(std::make_unique<ThreadPool>(options_.threads > 0 ? options_.threads : ThreadPool::hardware_threads())) {
  if (!(options_.gather_fraction >= 0 && options_.gather_fraction <= 1))
    fail("StepScheduler: gather_fraction ", options_.gather_fraction, " is outside [0, 1]");
  if (options_.gather_at_least.count() < 0)
    fail("StepScheduler: gather_at_least ", options_.gather_at_least.count(), " us is negative");
}

StepScheduler::~StepScheduler() = default;

int StepScheduler::threads() const { return pool_->threads(); }

Status StepScheduler::step(IOManager& io, const void* batch_key, StepKind kind, int64_t start_pos,
                           std::span<const int64_t> tokens) {
  Request request(io, batch_key, kind, false, start_pos, tokens);
  return submit(request);
}

Status StepScheduler::verify(IOManager& io, const void* batch_key, int64_t start_pos, std::span<const int64_t> tokens) {
  Request request(io, batch_key, StepKind::Decode, true, start_pos, tokens);
  return submit(request);
}

void StepScheduler::leave(const IOManager& io) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(returning_, [&](const Returning& r) { return r.io == &io; });
  changed_.notify_all();
}

void StepScheduler::pause() {
  std::lock_guard<std::mutex> lock(mutex_);
  paused_ = true;
}

void StepScheduler::resume() {
  std::lock_guard<std::mutex> lock(mutex_);
  paused_ = false;
  changed_.notify_all();
}

size_t StepScheduler::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

StepScheduler::Stats StepScheduler::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

Status StepScheduler::submit(Request& request) {
  std::unique_lock<std::mutex> lock(mutex_);
  std::erase_if(returning_, [&](const Returning& r) { return r.io == request.io; });
  queue_.push_back(&request);
  changed_.notify_all();
  while (!request.done) {
    if (stepping_ || paused_) {
      changed_.wait(lock);
    } else if (gathering(Clock::now())) {
      changed_.wait_until(lock, gather_until_);
    } else {
      run_next(lock);
    }
  }
  if (request.error) std::rethrow_exception(request.error);
  return request.status;
}

bool StepScheduler::gathering(Clock::time_point now) const {
  if (queue_.empty() || !queue_.front()->batchable() || now >= gather_until_) return false;
  const void* key = queue_.front()->batch_key;
  return std::any_of(returning_.begin(), returning_.end(), [&](const Returning& r) { return r.batch_key == key; });
}

void StepScheduler::run_next(std::unique_lock<std::mutex>& lock) {
  std::vector<Request*> requests;
  const bool decode = queue_.front()->batchable();
  if (decode) {
    const void* key = queue_.front()->batch_key;
    for (auto it = queue_.begin(); it != queue_.end();) {
      if ((*it)->batchable() && (*it)->batch_key == key) {
        requests.push_back(*it);
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
    // Those that missed this batch are not waited for again until they are back.
    std::erase_if(returning_, [&](const Returning& r) { return r.batch_key == key; });
  } else {
    requests.push_back(queue_.front());
    queue_.pop_front();
  }
  stepping_ = true;
  lock.unlock();
  const auto start = Clock::now();
  run(requests);
  const auto end = Clock::now();
  if (decode && options_.on_decode_step) {
    try {
      options_.on_decode_step(requests.size());
    } catch (...) {
      // An observer's failure must not leave the scheduler stepping forever; the step ran.
    }
  }
  lock.lock();
  stepping_ = false;
  for (Request* r : requests) {
    r->done = true;
    returning_.push_back({r->io, r->batch_key});
  }
  const auto wait = std::chrono::duration_cast<Clock::duration>((end - start) * options_.gather_fraction);
  gather_until_ = options_.gather_fraction > 0 ? end + std::max<Clock::duration>(wait, options_.gather_at_least) : end;
  if (decode) {
    ++stats_.decode_steps;
    stats_.decode_rows += requests.size();
    if (requests.size() > 1) ++stats_.batched_decode_steps;
    stats_.max_decode_rows = std::max(stats_.max_decode_rows, requests.size());
  } else {
    ++stats_.other_steps;
  }
  changed_.notify_all();
}

void StepScheduler::run(std::span<Request* const> requests) {
  auto alone = [this](Request& r) {
    try {
      r.status = r.verify ? r.io->verify(r.start_pos, r.tokens, pool_.get())
                          : r.io->step(r.kind, r.start_pos, r.tokens, pool_.get());
    } catch (...) {
      r.error = std::current_exception();
    }
  };
  if (requests.size() == 1) return alone(*requests[0]);
  std::vector<IOManager*> ios;
  std::vector<int64_t> positions, tokens;
  for (const Request* r : requests) {
    ios.push_back(r->io);
    positions.push_back(r->start_pos);
    tokens.push_back(r->tokens[0]);
  }
  try {
    const Status s = IOManager::decode_batch(ios, positions, tokens, pool_.get());
    for (Request* r : requests) r->status = s;
    return;
  } catch (const Error&) {
    // Refused before anything ran (a token or a position one of them cannot take, managers
    // that cannot run together): each runs alone and gets its own answer.
  } catch (...) {
    for (Request* r : requests) r->error = std::current_exception();
    return;
  }
  for (Request* r : requests) alone(*r);
}

}  // namespace hfstatic
