#include "runner/runner.h"

#include "runner/drafter.h"
#include "runner/step_scheduler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "kernels/thread_pool.h"
#include "tokenizer/tokenizer.h"
#include "util/proc_stats.h"

namespace hfstatic {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Length of the longest suffix of `text` that is a proper prefix of some stop string: text
// that may still turn into a stop string and must be held back.
size_t held_back(const std::string& text, const std::vector<std::string>& stops) {
  size_t hold = 0;
  for (const auto& s : stops)
    for (size_t len = std::min(text.size(), s.size() - 1); len > hold; --len)
      if (text.compare(text.size() - len, len, s, 0, len) == 0) {
        hold = len;
        break;
      }
  return hold;
}

// Tells the scheduler (if any), when the scope ends, that the runner asks for no next step soon.
class LeaveSchedulerOnExit {
 public:
  LeaveSchedulerOnExit(StepScheduler* scheduler, const IOManager& io) : scheduler_(scheduler), io_(io) {}
  ~LeaveSchedulerOnExit() {
    if (scheduler_) scheduler_->leave(io_);
  }
  LeaveSchedulerOnExit(const LeaveSchedulerOnExit&) = delete;
  LeaveSchedulerOnExit& operator=(const LeaveSchedulerOnExit&) = delete;

 private:
  StepScheduler* scheduler_;
  const IOManager& io_;
};
}  // namespace

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::Eos: return "eos";
    case StopReason::StopToken: return "stop_token";
    case StopReason::StopString: return "stop_string";
    case StopReason::Length: return "length";
    case StopReason::ContextFull: return "context_full";
    case StopReason::Stopped: return "stopped";
  }
  return "?";
}

double GenerationStats::decode_tokens_per_s() const {
  // The first sampled token comes from the prompt's logits; every later one costs a decode step.
  return decode_ms > 0 && generated_tokens > 1 ? (generated_tokens - 1) * 1000.0 / decode_ms : 0;
}

std::unique_ptr<Runner> Runner::load(const std::string& path, const RunnerOptions& options) {
  auto t0 = Clock::now();
  auto runner =
      load(Program::load(path, options.runtime.huge_pages ? PagePolicy::HugePages : PagePolicy::Plain), options);
  runner->load_ms_ = ms_since(t0);
  return runner;
}

std::unique_ptr<Runner> Runner::load(std::shared_ptr<const Program> program, const RunnerOptions& options) {
  auto t0 = Clock::now();
  BufferAllocator& allocator = options.allocator ? *options.allocator : HeapAllocator::instance();
  auto io = IOManagerRegistry::instance().load(program, allocator, options.runtime);
  std::shared_ptr<const Tokenizer> tokenizer;
  std::string tokenizer_json = program->embedded_file("tokenizer.json");
  if (!tokenizer_json.empty()) {
    try {
      tokenizer = std::make_shared<const Tokenizer>(
          Tokenizer::from_json(tokenizer_json, program->embedded_file("tokenizer_config.json")));
    } catch (const Error& e) {
      fail(program->path(), ": embedded ", e.what());  // "tokenizer.json: FIELD: ..."
    }
  }
  auto runner = std::make_unique<Runner>(std::move(io), std::move(tokenizer), options);
  runner->batch_key_ = program.get();
  if (runner->tokenizer_) runner->tokenizer_origin_ = program->path() + ": embedded tokenizer.json";
  runner->program_path_ = program->path();
  runner->load_ms_ = ms_since(t0);
  return runner;
}

Runner::Runner(std::unique_ptr<IOManager> io, std::shared_ptr<const Tokenizer> tokenizer, const RunnerOptions& options)
    : io_(std::move(io)), tokenizer_(std::move(tokenizer)), scheduler_(options.scheduler), batch_key_(io_.get()) {
  if (!scheduler_)
    pool_ = std::make_unique<ThreadPool>(options.threads > 0 ? options.threads : ThreadPool::hardware_threads());
}

Runner::~Runner() {
  if (scheduler_) scheduler_->leave(*io_);
}

ThreadPool& Runner::thread_pool() { return scheduler_ ? scheduler_->pool() : *pool_; }

Status Runner::run_step(StepKind kind, int64_t start_pos, std::span<const int64_t> tokens) {
  if (scheduler_) return scheduler_->step(*io_, batch_key_, kind, start_pos, tokens);
  return io_->step(kind, start_pos, tokens, pool_.get());
}

Status Runner::run_verify(int64_t start_pos, std::span<const int64_t> tokens) {
  if (scheduler_) return scheduler_->verify(*io_, batch_key_, start_pos, tokens);
  return io_->verify(start_pos, tokens, pool_.get());
}

void Runner::reset() {
  io_->reset();
  context_.clear();
  fed_ = 0;
}

void Runner::rewind(size_t n) {
  if (n > context_.size()) fail("cannot rewind ", n, " tokens: the context holds ", context_.size());
  context_.resize(context_.size() - n);
  fed_ = std::min<int64_t>(fed_, int64_t(context_.size()));
}

void Runner::check_logits(std::span<const float> logits, size_t generated) const {
  bool any_nan = false;
  for (float v : logits) any_nan |= std::isnan(v);
  if (!any_nan) return;
  const auto nan = std::count_if(logits.begin(), logits.end(), [](float v) { return std::isnan(v); });
  const std::string program = program_path_.empty() ? std::string("the program") : program_path_;
  throw ModelOutputError(
      cat(program_path_.empty() ? "" : program_path_ + ": ", "the logits of generated token ", generated,
          " (predicting position ", context_.size(), ") are NaN in ", nan, " of ", logits.size(),
          " entries: the weights or quantization scales may hold NaN or infinity (hfstatic validate --check-weights ",
          program, " names them), or the activations overflowed"));
}

void Runner::check_tokens(std::span<const int64_t> tokens) const {
  const int64_t vocab = io_->model().vocab_size;
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab)
      fail("prompt token ", i, " = ", tokens[i], " is outside the vocabulary [0, ", vocab, ")");
}

// Fed step by step, a runner promises no next step: batches do not wait for it.
std::span<const float> Runner::prefill(std::span<const int64_t> tokens) {
  LeaveSchedulerOnExit leave(scheduler_, *io_);
  check_tokens(tokens);
  feed_prompt(tokens);
  return io_->logits();
}

std::span<const float> Runner::decode(int64_t token) {
  LeaveSchedulerOnExit leave(scheduler_, *io_);
  check_tokens(std::span<const int64_t>(&token, 1));
  if (int64_t(context_.size()) > fed_) feed_prompt({});
  if (fed_ >= io_->model().max_context)
    fail("prompt does not fit: start_pos ", fed_, " + 1 tokens > max_context ", io_->model().max_context);
  context_.push_back(token);
  try {
    feed_token(token);
  } catch (const Error&) {
    context_.pop_back();
    throw;
  }
  return io_->logits();
}

int64_t Runner::feed_prompt(std::span<const int64_t> prompt) {
  // Unfed context (the last sampled token of the previous turn) goes first.
  std::vector<int64_t> to_feed(context_.begin() + fed_, context_.end());
  to_feed.insert(to_feed.end(), prompt.begin(), prompt.end());
  if (to_feed.empty()) fail("nothing to feed: the prompt is empty and no token is pending");
  std::vector<Step> steps;
  try {
    steps = io_->plan(fed_, to_feed.size());
  } catch (const Error& e) {
    fail(e.what(), " (context holds ", fed_, " tokens, prompt adds ", to_feed.size(), ")");
  }
  for (const Step& s : steps) {
    Status st = run_step(s.kind, s.start_pos, std::span<const int64_t>(to_feed).subspan(s.begin, s.count));
    // Nothing past fed_ is visible to later steps, so a failed prompt leaves the context as it was.
    if (!st.ok()) fail(st.message());
  }
  context_.resize(size_t(fed_));
  context_.insert(context_.end(), to_feed.begin(), to_feed.end());
  fed_ = int64_t(context_.size());
  return int64_t(to_feed.size());
}

void Runner::feed_token(int64_t token) {
  Status st = run_step(StepKind::Decode, fed_, std::span<const int64_t>(&token, 1));
  if (!st.ok()) fail(st.message());
  ++fed_;
}

std::vector<int64_t> Runner::feed_with_drafts(int64_t token, const GenerationConfig& config, int64_t room,
                                              GenerationStats& stats) {
  ++stats.steps;
  const int64_t most = std::min({config.draft_max, room, io_->verify_capacity(fed_) - 1});
  std::vector<int64_t> drafts;
  if (config.drafter && most > 0) drafts = config.drafter->propose(context_, most);
  if (int64_t(drafts.size()) > std::max<int64_t>(most, 0)) drafts.resize(size_t(std::max<int64_t>(most, 0)));
  if (drafts.empty()) {
    feed_token(token);
    return drafts;
  }
  check_tokens(drafts);
  std::vector<int64_t> rows = {token};
  rows.insert(rows.end(), drafts.begin(), drafts.end());
  Status st = run_verify(fed_, rows);
  if (!st.ok()) fail(st.message());
  ++fed_;
  stats.drafted_tokens += int64_t(drafts.size());
  return drafts;
}

GenerationResult Runner::generate_tokens(std::span<const int64_t> prompt, const GenerationConfig& config,
                                         const std::function<bool(int64_t)>& on_token,
                                         const std::function<void(const std::string&)>& on_text) {
  if (on_text && !tokenizer_) fail("streaming text needs a tokenizer; this program has none");
  const ModelInfo& m = io_->model();
  const auto t0 = Clock::now();
  stop_requested_.store(false);
  // Between its steps the runner samples; once it returns, batches stop waiting for it.
  LeaveSchedulerOnExit leave(scheduler_, *io_);
  if (config.max_new_tokens < 0) fail("max_new_tokens ", config.max_new_tokens, " is negative");
  if (config.max_new_tokens > m.max_context)
    fail("max_new_tokens ", config.max_new_tokens, " exceeds the model's max_context ", m.max_context);
  if (!config.stop_strings.empty() && !tokenizer_) fail("stop strings need a tokenizer; this program has none");
  check_tokens(prompt);

  GenerationResult result;
  GenerationStats& stats = result.stats;
  stats.load_ms = load_ms_;
  stats.prompt_tokens = feed_prompt(prompt);
  stats.prefill_ms = ms_since(t0);

  Sampler sampler(config.sampling);
  std::unique_ptr<StreamDecoder> decoder;
  if (tokenizer_) {
    decoder = std::make_unique<StreamDecoder>(*tokenizer_, /*skip_special=*/true);
    // The text continues what the model has seen: decoded as such, its first space stays.
    std::vector<int32_t> seen;  // the last few ids with text, which is all the decoder keeps
    for (auto it = context_.rbegin(); it != context_.rend() && seen.size() < 16; ++it)
      if (*it < tokenizer_->vocab_size()) seen.insert(seen.begin(), int32_t(*it));
    decoder->continue_after(seen);
  }
  std::string text;
  size_t emitted = 0;  // bytes of text passed to on_text
  const auto decode_start = Clock::now();
  result.stop_reason = StopReason::Length;
  // The next token's logits: the last step's, or row `row` of a verify step of `drafts`.
  std::span<const float> logits = io_->logits();
  std::vector<int64_t> drafts;
  size_t row = 0;
  while (int64_t(result.tokens.size()) < config.max_new_tokens) {
    if (stop_requested_.load()) {
      result.stop_reason = StopReason::Stopped;
      break;
    }
    check_logits(logits, result.tokens.size());
    bool accepted = false;
    const int64_t token = row < drafts.size() ? sampler.sample_draft(logits, context_, drafts[row], &accepted)
                                              : sampler.sample(logits, context_);
    if (accepted) ++stats.accepted_tokens;
    if (result.tokens.empty()) stats.ttft_ms = ms_since(t0);
    result.tokens.push_back(token);
    context_.push_back(token);  // pending: fed at the next step or the next turn
    bool stop = false;
    if (!config.ignore_eos && std::find(m.eos_ids.begin(), m.eos_ids.end(), token) != m.eos_ids.end()) {
      result.stop_reason = StopReason::Eos;
      stop = true;
    } else if (std::find(config.stop_tokens.begin(), config.stop_tokens.end(), token) != config.stop_tokens.end()) {
      result.stop_reason = StopReason::StopToken;
      stop = true;
    }
    // Models often pad their vocabulary past the tokenizer's ids: such ids have no text.
    if (decoder && !stop && token < tokenizer_->vocab_size()) text += decoder->push(int32_t(token));
    if (!config.stop_strings.empty()) {
      size_t cut = std::string::npos;
      for (const auto& s : config.stop_strings)
        if (!s.empty()) cut = std::min(cut, text.find(s));
      if (cut != std::string::npos) {
        text.resize(cut);
        result.stop_reason = StopReason::StopString;
        stop = true;
      }
    }
    // Stream what can no longer turn into a stop string.
    if (on_text) {
      const size_t safe = stop ? text.size() : text.size() - held_back(text, config.stop_strings);
      if (safe > emitted) {
        on_text(text.substr(emitted, safe - emitted));
        emitted = safe;
      }
    }
    if (on_token && !on_token(token)) {
      result.stop_reason = StopReason::Stopped;
      stop = true;
    }
    if (stop) break;
    if (int64_t(result.tokens.size()) == config.max_new_tokens) break;
    if (accepted) {  // the verify step fed it already, with the draft after it
      ++fed_;
      logits = io_->row_logits(int64_t(++row));
      continue;
    }
    if (fed_ >= m.max_context) {
      result.stop_reason = StopReason::ContextFull;
      break;
    }
    const int64_t room = config.max_new_tokens - int64_t(result.tokens.size());
    drafts = feed_with_drafts(token, config, room, stats);
    row = 0;
    logits = drafts.empty() ? io_->logits() : io_->row_logits(0);
  }
  if (decoder && result.stop_reason != StopReason::StopString) text += decoder->flush();
  if (on_text && text.size() > emitted) on_text(text.substr(emitted));
  result.text = std::move(text);
  stats.generated_tokens = int64_t(result.tokens.size());
  stats.decode_ms = ms_since(decode_start);
  stats.peak_rss_bytes = peak_rss_bytes();
  return result;
}

GenerationResult Runner::generate(const std::string& prompt, const GenerationConfig& config,
                                  const std::function<void(const std::string&)>& on_text, bool add_special_tokens) {
  if (!tokenizer_) fail("this program has no tokenizer; pass token ids instead of text");
  // Special tokens (bos) belong at the start of a conversation only.
  const bool specials = add_special_tokens && context_.empty();
  // Tokenized only as far as the context can take: a longer prompt is refused early.
  const int64_t start = int64_t(context_.size()), max_context = io_->model().max_context;
  const size_t room = size_t(std::max<int64_t>(0, max_context - start));
  std::vector<int32_t> ids32;
  try {
    ids32 = tokenizer_->encode(prompt, specials, /*parse_special=*/true, room);
  } catch (const TokenLimitError& e) {
    fail("prompt does not fit: start_pos ", start, " + ", e.what(), " > max_context ", max_context);
  } catch (const Error& e) {
    if (tokenizer_origin_.empty()) throw;
    const std::string_view what = e.what(), file = "tokenizer.json: ";
    fail(tokenizer_origin_, ": ", what.substr(what.rfind(file, 0) == 0 ? file.size() : 0));
  }
  std::vector<int64_t> ids(ids32.begin(), ids32.end());
  return generate_tokens(ids, config, {}, on_text);
}

}  // namespace hfstatic
