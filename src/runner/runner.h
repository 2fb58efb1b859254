// The text generation runner.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "io/io_manager.h"
#include "runner/sampler.h"

namespace hfstatic {

class Drafter;
class StepScheduler;
class Tokenizer;
class ThreadPool;

// Thrown mid-generation when the model computed logits that cannot be sampled (NaN): the
// program's fault, not the request's.
class ModelOutputError : public Error {
 public:
  using Error::Error;
};

enum class StopReason { Eos, StopToken, StopString, Length, ContextFull, Stopped };
const char* stop_reason_name(StopReason r);  // "eos", "stop_token", "stop_string", "length", "context_full", "stopped"

struct GenerationConfig {
  int64_t max_new_tokens = 128;
  SamplingConfig sampling;
  std::vector<int64_t> stop_tokens;       // in addition to the model's eos ids
  std::vector<std::string> stop_strings;  // needs a tokenizer
  bool ignore_eos = false;
  // Speculative decoding: the drafter (not owned; null: off) proposes up to draft_max tokens,
  // which one step verifies. Greedy output is the same token for token; sampled output keeps
  // the sampler's distribution (Sampler::sample_draft).
  Drafter* drafter = nullptr;
  int64_t draft_max = 4;
};

struct GenerationStats {
  double load_ms = 0;  // program load + validation + allocation
  double ttft_ms = 0;  // generate() call to the first sampled token
  double prefill_ms = 0, decode_ms = 0;
  int64_t prompt_tokens = 0;     // tokens fed before the first sample (pending + prompt)
  int64_t generated_tokens = 0;  // sampled tokens
  double prefill_tokens_per_s() const { return prefill_ms > 0 ? prompt_tokens * 1000.0 / prefill_ms : 0; }
  double decode_tokens_per_s() const;
  uint64_t peak_rss_bytes = 0;
  // Model steps after the prompt (decode and verify steps), tokens drafted and accepted.
  int64_t steps = 0, drafted_tokens = 0, accepted_tokens = 0;
};

struct GenerationResult {
  std::vector<int64_t> tokens;  // sampled tokens (an eos or stop token included, stop strings cut from text)
  std::string text;             // decoded text of the sampled tokens (empty without a tokenizer)
  StopReason stop_reason = StopReason::Length;
  GenerationStats stats;
};

struct RunnerOptions {
  int threads = 0;                       // 0: all hardware threads
  BufferAllocator* allocator = nullptr;  // the state, the inputs and the arenas; nullptr: the heap
  RuntimeOptions runtime;                // how the program is mapped and its methods run
  // Not owned, outlives the runner: every step runs through it, on its pool (`threads` is then
  // not used), its decode steps batched with other runners' (step_scheduler.h). nullptr: the
  // runner has a pool of its own.
  StepScheduler* scheduler = nullptr;
};

class Runner {
 public:
  // Loads the program (in huge pages unless options.runtime says otherwise), picks its
  // IOManager, and its embedded tokenizer when it has one.
  static std::unique_ptr<Runner> load(const std::string& program_path, const RunnerOptions& options = {});
  static std::unique_ptr<Runner> load(std::shared_ptr<const Program> program, const RunnerOptions& options = {});
  Runner(std::unique_ptr<IOManager> io, std::shared_ptr<const Tokenizer> tokenizer, const RunnerOptions& options = {});
  ~Runner();

  // Continues the conversation from the current position with `prompt`. Throws Error before
  // running anything when the prompt does not fit (numbers in the message) or is invalid, and
  // mid-generation when a logit to sample from is NaN (naming the token, the position and the
  // weight check that finds a NaN or infinite weight).
  // on_token(id) is called for each sampled token; return false to stop.
  // on_text, when given, receives the decoded text as generate() streams it (needs a tokenizer).
  // The one generation loop: generate() encodes its text and calls this.
  GenerationResult generate_tokens(std::span<const int64_t> prompt, const GenerationConfig& config,
                                   const std::function<bool(int64_t)>& on_token = {},
                                   const std::function<void(const std::string&)>& on_text = {});
  // Text in, text out; on_text receives the decoded text piece by piece (never a partial UTF-8
  // sequence, never a piece of a stop string). Needs a tokenizer.
  GenerationResult generate(const std::string& prompt, const GenerationConfig& config,
                            const std::function<void(const std::string&)>& on_text = {},
                            bool add_special_tokens = true);

  // Step-level access, for inspection and sampling loops of one's own. prefill feeds `tokens`
  // after the context (a pending sampled token first) as a prompt; decode feeds one token with a
  // decode step (after any pending one). Both return the next-token logits, owned by the
  // IOManager and valid until the next step; both throw Error as generate_tokens does.
  std::span<const float> prefill(std::span<const int64_t> tokens);
  std::span<const float> decode(int64_t token);

  void reset();                                 // back to position 0; the IOManager is reset too
  void rewind(size_t n);                        // forget the last n tokens of the context
  void stop() { stop_requested_.store(true); }  // thread-safe; ends generation at the next token

  int64_t position() const { return fed_; }                         // tokens the model has seen
  const std::vector<int64_t>& context() const { return context_; }  // fed tokens + the pending one
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  IOManager& io() { return *io_; }
  // The compute threads its steps run on (the bench measures the machine's ceilings on them):
  // its own, or its scheduler's.
  ThreadPool& thread_pool();
  const ModelInfo& model() const { return io_->model(); }
  double load_ms() const { return load_ms_; }

 private:
  // Throws Error when a token is outside the model's vocabulary.
  void check_tokens(std::span<const int64_t> tokens) const;
  // Throws ModelOutputError naming the token and the position when a logit to sample from is NaN.
  void check_logits(std::span<const float> logits, size_t generated) const;
  // Feeds the pending token and the prompt; returns how many tokens it fed. Throws Error.
  int64_t feed_prompt(std::span<const int64_t> prompt);
  // Feeds the sampled token at the current position. Throws Error.
  void feed_token(int64_t token);
  // io_->step and io_->verify on the runner's pool, or through its scheduler.
  Status run_step(StepKind kind, int64_t start_pos, std::span<const int64_t> tokens);
  Status run_verify(int64_t start_pos, std::span<const int64_t> tokens);
  // Feeds the pending token `token` with up to draft_max drafts after it in one verify step
  // when the drafter has some and the step fits; returns the drafts (empty: fed alone, as
  // feed_token does). At most `room` drafts.
  std::vector<int64_t> feed_with_drafts(int64_t token, const GenerationConfig& config, int64_t room,
                                        GenerationStats& stats);

  std::unique_ptr<IOManager> io_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::unique_ptr<ThreadPool> pool_;  // null with a scheduler
  StepScheduler* scheduler_ = nullptr;
  // What decode steps of other runners this one's may share a batch with: the program's
  // (runners over one program with the same runtime options batch together).
  const void* batch_key_ = nullptr;
  std::vector<int64_t> context_;
  int64_t fed_ = 0;
  std::atomic<bool> stop_requested_{false};
  double load_ms_ = 0;
  std::string tokenizer_origin_;  // "PROGRAM: embedded tokenizer.json", for errors; empty when given
  std::string program_path_;      // for errors; empty when the IOManager was given
};

}  // namespace hfstatic
