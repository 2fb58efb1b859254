// Runners: text generation, chat, and step-level access to the logits.
#include <pybind11/numpy.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "bindings.h"
#include "chat/conversation.h"
#include "frontend/default_program.h"
#include "frontend/runtime_env.h"
#include "kernels/thread_pool.h"
#include "runner/drafter.h"
#include "runner/runner.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_handle.h"

namespace hfstatic::python {
namespace {

struct PyRunner {
  std::shared_ptr<Runner> runner;
  std::string name;  // the program's path, for errors
  RunnerOptions options;
  PromptLookup lookup;
  std::unique_ptr<Drafter> draft;  // the draft program of draft_path, loaded by the first call that names it
  std::string draft_path;
  std::atomic<bool> busy{false};  // one call at a time; a second one is refused rather than racing
  std::mutex last_mutex;          // a stream's thread sets `last` while Python may read it
  std::optional<GenerationResult> last;

  void set_last(GenerationResult result) {
    std::lock_guard lock(last_mutex);
    last = std::move(result);
  }
  std::optional<GenerationResult> get_last() {
    std::lock_guard lock(last_mutex);
    return last;
  }
};

// Holds the runner for one call; a runner already in use (another thread, a running stream) is a
// UsageError. A stream hands it to its thread, which lets go when the generation ends.
class Busy {
 public:
  explicit Busy(PyRunner& r) : busy_(&r.busy) {
    bool expected = false;
    if (!busy_->compare_exchange_strong(expected, true))
      throw UsageError(
          "this Runner is busy in another thread (a generation or stream is running); use one Runner per thread");
  }
  Busy(Busy&& other) noexcept : busy_(std::exchange(other.busy_, nullptr)) {}
  Busy(const Busy&) = delete;
  Busy& operator=(const Busy&) = delete;
  Busy& operator=(Busy&&) = delete;
  ~Busy() { release(); }

  void release() {
    if (busy_) std::exchange(busy_, nullptr)->store(false);
  }

 private:
  std::atomic<bool>* busy_;
};

using Prompt = std::variant<std::string, std::vector<int64_t>>;
using StopStrings = std::variant<std::string, std::vector<std::string>>;
using TextCallback = std::optional<py::function>;
using TextSink = std::function<void(const std::string&)>;

double real_arg(const char* arg, double value, double lo, double hi) {
  if (!(value >= lo && value <= hi)) throw UsageError(cat(arg, ": ", value, " is outside [", lo, ", ", hi, "]"));
  return value;
}

// A sampling argument, checked against the range every front end shares (runner/sampler.h).
double sampling_arg(const char* arg, double value, SamplingParameter p) {
  if (std::string why = sampling_value_problem(p, value); !why.empty()) throw UsageError(cat(arg, ": ", why));
  return value;
}

// The generation settings, checked as `hfstatic run` checks its flags. Without max_tokens: 64,
// or the model's context when it is shorter.
GenerationConfig generation_config(const Runner& runner, std::optional<int64_t> max_tokens, double temperature,
                                   int64_t top_k, double top_p, double min_p, double repeat_penalty, int64_t seed,
                                   const std::optional<StopStrings>& stop, bool ignore_eos) {
  GenerationConfig config;
  config.max_new_tokens = max_tokens ? int64_t(real_arg("max_tokens", double(*max_tokens), 0, double(int64_t(1) << 24)))
                                     : std::min<int64_t>(64, runner.model().max_context);
  config.sampling.temperature = float(sampling_arg("temperature", temperature, SamplingParameter::temperature));
  config.sampling.top_k = int64_t(sampling_arg("top_k", double(top_k), SamplingParameter::top_k));
  config.sampling.top_p = float(sampling_arg("top_p", top_p, SamplingParameter::top_p));
  config.sampling.min_p = float(sampling_arg("min_p", min_p, SamplingParameter::min_p));
  config.sampling.repetition_penalty =
      float(sampling_arg("repeat_penalty", repeat_penalty, SamplingParameter::repetition_penalty));
  if (seed < 0) throw UsageError(cat("seed: ", seed, " is negative"));
  config.sampling.seed = uint64_t(seed);
  config.ignore_eos = ignore_eos;
  if (stop) {
    if (auto* one = std::get_if<std::string>(&*stop))
      config.stop_strings = {*one};
    else
      config.stop_strings = std::get<std::vector<std::string>>(*stop);
  }
  return config;
}

// Speculative decoding as `hfstatic run --lookup K` / `--draft FILE --draft-max K` sets it up.
// Called holding the runner (Busy) and the GIL; a draft program loads without the GIL.
void set_drafter(PyRunner& r, GenerationConfig& config, std::optional<int64_t> lookup,
                 const std::optional<std::filesystem::path>& draft, std::optional<int64_t> draft_max) {
  const int64_t k = int64_t(real_arg("lookup", double(lookup.value_or(0)), 0, 64));
  if (k > 0 && draft) throw UsageError("give only one of lookup and draft");
  if (draft_max && !draft) throw UsageError("draft_max: only with draft");
  if (k > 0) {
    config.drafter = &r.lookup;
    config.draft_max = k;
    return;
  }
  if (!draft) return;
  config.draft_max = int64_t(real_arg("draft_max", double(draft_max.value_or(4)), 1, 64));
  const std::string path = draft->string();
  if (!r.draft || r.draft_path != path) {
    r.draft.reset();
    r.draft_path.clear();
    py::gil_scoped_release release;
    std::unique_ptr<Runner> model = Runner::load(path, r.options);
    r.draft = refusals_are_usage_errors(
        [&] { return std::make_unique<DraftModel>(std::move(model), *r.runner, path, r.name); });
    r.draft_path = path;
  }
  config.drafter = r.draft.get();
}

// on_text as the runner calls it: with the GIL taken back for the Python call.
TextSink text_callback(const TextCallback& on_text) {
  if (!on_text) return {};
  return [&on_text](const std::string& piece) {
    py::gil_scoped_acquire gil;
    (*on_text)(py::str(piece));
  };
}

// Runs one generation without the GIL and keeps its result for Runner.last.
std::string run_generation(PyRunner& r, const std::function<GenerationResult()>& generate) {
  GenerationResult result;
  {
    py::gil_scoped_release release;
    result = refusals_are_usage_errors(generate);
  }
  std::string text = result.text;
  r.set_last(std::move(result));
  return text;
}

// The logits of the last step as a read-only NumPy view of the runner's buffer (no copy); the
// array keeps the runner alive, and its values change with the next step.
py::array_t<float> logits_view(std::span<const float> logits, const py::object& owner) {
  py::array_t<float> view({py::ssize_t(logits.size())}, {py::ssize_t(sizeof(float))}, logits.data(), owner);
  py::detail::array_proxy(view.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return view;
}

std::span<const float> step(PyRunner& r, const std::function<std::span<const float>()>& fn) {
  Busy busy(r);
  py::gil_scoped_release release;
  return refusals_are_usage_errors(fn);
}

py::dict model_info(const ModelInfo& m) {
  py::dict d;
  d["n_layers"] = m.n_layers;
  d["n_kv_heads"] = m.n_kv_heads;
  d["head_dim"] = m.head_dim;
  d["max_context"] = m.max_context;
  d["prefill_len"] = m.prefill_len;
  d["vocab_size"] = m.vocab_size;
  d["cache_dtype"] = dtype_name(m.cache_dtype);
  d["bos_id"] = m.bos_id >= 0 ? py::object(py::int_(m.bos_id)) : py::none();
  d["eos_ids"] = m.eos_ids;
  d["prefill_method"] = m.prefill_method;
  d["decode_method"] = m.decode_method;
  return d;
}

py::dict stats_dict(const GenerationStats& s) {
  py::dict d;
  d["load_ms"] = s.load_ms;
  d["ttft_ms"] = s.ttft_ms;
  d["prefill_ms"] = s.prefill_ms;
  d["decode_ms"] = s.decode_ms;
  d["prompt_tokens"] = s.prompt_tokens;
  d["generated_tokens"] = s.generated_tokens;
  d["prefill_tokens_per_s"] = s.prefill_tokens_per_s();
  d["decode_tokens_per_s"] = s.decode_tokens_per_s();
  d["peak_rss_bytes"] = s.peak_rss_bytes;
  d["steps"] = s.steps;
  d["drafted_tokens"] = s.drafted_tokens;
  d["accepted_tokens"] = s.accepted_tokens;
  return d;
}

// The environment's runtime switches (as the tool reads them), then the arguments given.
RuntimeOptions runtime_options(const std::optional<std::string>& isa, std::optional<bool> active_rows,
                               std::optional<bool> fold_ops, std::optional<bool> huge_pages,
                               std::optional<bool> idle_prefetch, std::optional<int64_t> max_buffer_mib) {
  RuntimeOptions o;
  try {
    o = frontend::runtime_options_from_env();
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  if (isa) {
    o.isa = frontend::isa_from_name(*isa);
    if (!o.isa) throw UsageError(cat("isa: '", *isa, "' is not one of ", frontend::kIsaNames));
  }
  if (active_rows) o.active_rows = *active_rows;
  if (fold_ops) o.fold_ops = *fold_ops;
  if (huge_pages) o.huge_pages = *huge_pages;
  if (idle_prefetch) o.idle_prefetch = *idle_prefetch;
  if (max_buffer_mib) {
    if (*max_buffer_mib < 1 || *max_buffer_mib > frontend::kMaxBufferMib)
      throw UsageError(cat("max_buffer_mib: ", *max_buffer_mib, " is outside [1, ", frontend::kMaxBufferMib, "]"));
    o.max_buffer_bytes = uint64_t(*max_buffer_mib) << 20;
  }
  return o;
}

std::shared_ptr<PyRunner> load_runner(const std::optional<std::filesystem::path>& path, std::optional<int> threads,
                                      const std::optional<std::string>& isa, std::optional<bool> active_rows,
                                      std::optional<bool> fold_ops, std::optional<bool> huge_pages,
                                      std::optional<bool> idle_prefetch, std::optional<int64_t> max_buffer_mib) {
  RunnerOptions options;
  if (threads) options.threads = int(real_arg("threads", *threads, 1, ThreadPool::kMaxThreads));
  options.runtime = runtime_options(isa, active_rows, fold_ops, huge_pages, idle_prefetch, max_buffer_mib);
  auto r = std::make_shared<PyRunner>();
  r->name = path ? path->string() : frontend::kDefaultProgramName;
  r->options = options;
  py::gil_scoped_release release;
  r->runner = path ? Runner::load(path->string(), options) : Runner::load(load_program(std::nullopt), options);
  return r;
}

const Prompt& generation_input(const Prompt& prompt) { return prompt; }
std::vector<ChatMessage> generation_input(const py::sequence& messages) { return chat_messages(messages); }

GenerationResult start_generate(Runner& runner, const Prompt& prompt, const GenerationConfig& config,
                                const TextSink& on_text) {
  if (auto* text = std::get_if<std::string>(&prompt)) return runner.generate(*text, config, on_text);
  return runner.generate_tokens(std::get<std::vector<int64_t>>(prompt), config, {}, on_text);
}

// The whole conversation, from position 0.
GenerationResult start_chat(Runner& runner, const std::vector<ChatMessage>& messages, const GenerationConfig& config,
                            const TextSink& on_text) {
  if (!runner.tokenizer()) throw UsageError("this program has no tokenizer; chat needs one");
  Conversation conversation(*runner.tokenizer(), messages);
  bool restart = false;
  std::vector<int64_t> ids = conversation.pending_tokens(restart);
  runner.reset();
  return runner.generate_tokens(ids, config, {}, on_text);
}

// A generating method of Runner: its input (converted with the GIL held), the sampling keywords,
// then start(runner, input, config, on_text) without the GIL; the result becomes Runner.last.
template <typename Input, typename Start>
auto generation_method(Start start) {
  return
      [start](PyRunner& r, const Input& input, std::optional<int64_t> max_tokens, double temperature, int64_t top_k,
              double top_p, double min_p, double repeat_penalty, int64_t seed, const std::optional<StopStrings>& stop,
              bool ignore_eos, const TextCallback& on_text, std::optional<int64_t> lookup,
              const std::optional<std::filesystem::path>& draft, std::optional<int64_t> draft_max) {
        const auto& prepared = generation_input(input);
        Busy busy(r);
        GenerationConfig config = generation_config(*r.runner, max_tokens, temperature, top_k, top_p, min_p,
                                                    repeat_penalty, seed, stop, ignore_eos);
        set_drafter(r, config, lookup, draft, draft_max);
        const TextSink on_piece = text_callback(on_text);
        return run_generation(r, [&] { return start(*r.runner, prepared, config, on_piece); });
      };
}

// A generation in a thread of its own, behind Runner.stream and Runner.chat_stream. The thread
// never touches Python: its text goes through a queue, so the consumer may drop the stream, raise,
// or leave it running at exit (the module's atexit hook closes every stream). The consumer waits
// without the GIL, and takes the GIL back outside destructors: a thread that wakes after the
// interpreter has finalized is ended by Python with an unwind a destructor must not see.
class Stream {
 public:
  using Generate = std::function<GenerationResult(Runner&, const TextSink&)>;

  Stream(std::shared_ptr<PyRunner> owner, Busy busy, Generate generate) : owner_(std::move(owner)) {
    thread_ = std::thread(
        [this, busy = std::move(busy), generate = std::move(generate)]() mutable { work(std::move(busy), generate); });
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() { close(); }

  // The next piece of text, or nothing once the generation has ended (its error raised then).
  std::optional<std::string> next() {
    for (;;) {
      std::optional<std::string> piece;
      bool ended = false;
      PyThreadState* saved = PyEval_SaveThread();
      {
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, std::chrono::milliseconds(100), [&] { return !pieces_.empty() || !generating_; });
        if (!pieces_.empty()) {
          piece = std::move(pieces_.front());
          pieces_.pop_front();
        } else {
          ended = !generating_;
        }
      }
      PyEval_RestoreThread(saved);
      if (piece) return piece;
      if (ended) break;
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
    close();
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    return std::nullopt;
  }

  // Stops the generation at its next token and waits for the thread. Called with the GIL held.
  void close() {
    if (joined_.load()) return;
    PyThreadState* saved = PyEval_SaveThread();
    {
      std::lock_guard join(join_mutex_);
      if (thread_.joinable()) {
        std::unique_lock lock(mutex_);
        cancelled_ = true;
        // The runner resets its stop request when a generation starts: ask until it has ended.
        while (generating_) {
          owner_->runner->stop();
          changed_.wait_for(lock, std::chrono::milliseconds(20));
        }
        lock.unlock();
        thread_.join();
      }
      joined_.store(true);
    }
    PyEval_RestoreThread(saved);
  }

 private:
  void work(Busy busy, const Generate& generate) {
    std::exception_ptr error;
    try {
      owner_->set_last(refusals_are_usage_errors(
          [&] { return generate(*owner_->runner, [this](const std::string& piece) { push(piece); }); }));
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lock(mutex_);
    error_ = error;
    generating_ = false;
    busy.release();  // under mutex_: while generating_ holds, a stop() can only reach this generation
    changed_.notify_all();
  }

  void push(const std::string& piece) {
    std::lock_guard lock(mutex_);
    pieces_.push_back(piece);
    if (cancelled_) owner_->runner->stop();
    changed_.notify_all();
  }

  std::shared_ptr<PyRunner> owner_;
  std::mutex mutex_;  // guards what follows, up to join_mutex_
  std::condition_variable changed_;
  std::deque<std::string> pieces_;
  bool generating_ = true;
  bool cancelled_ = false;
  std::exception_ptr error_;
  std::mutex join_mutex_;
  std::atomic<bool> joined_{false};
  std::thread thread_;
};

// The streams not yet collected, for the atexit hook: a thread must end before the interpreter.
std::mutex streams_mutex;
std::vector<std::weak_ptr<Stream>> live_streams;

void close_all_streams() {
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard lock(streams_mutex);
    for (const auto& s : live_streams)
      if (auto stream = s.lock()) streams.push_back(std::move(stream));
  }
  for (const auto& stream : streams) stream->close();
}

// Starts a stream: the runner is taken (or refused) here, in the caller's thread.
template <typename Input, typename Start>
auto stream_method(Start start) {
  return [start](const std::shared_ptr<PyRunner>& r, const Input& input, std::optional<int64_t> max_tokens,
                 double temperature, int64_t top_k, double top_p, double min_p, double repeat_penalty, int64_t seed,
                 const std::optional<StopStrings>& stop, bool ignore_eos, const TextCallback& on_text,
                 std::optional<int64_t> lookup, const std::optional<std::filesystem::path>& draft,
                 std::optional<int64_t> draft_max) {
    if (on_text) throw UsageError("stream() yields the text itself; on_text is for generate() and chat()");
    auto prepared = generation_input(input);
    Busy busy(*r);
    GenerationConfig config = generation_config(*r->runner, max_tokens, temperature, top_k, top_p, min_p,
                                                repeat_penalty, seed, stop, ignore_eos);
    set_drafter(*r, config, lookup, draft, draft_max);
    auto stream = std::make_shared<Stream>(
        r, std::move(busy), [start, prepared = std::move(prepared), config](Runner& runner, const TextSink& on_piece) {
          return start(runner, prepared, config, on_piece);
        });
    std::lock_guard lock(streams_mutex);
    std::erase_if(live_streams, [](const std::weak_ptr<Stream>& s) { return s.expired(); });
    live_streams.push_back(stream);
    return stream;
  };
}

// The sampling keywords every generating method takes, in the order of generation_config.
#define HFSTATIC_SAMPLING_ARGS                                                                                         \
  py::kw_only(), py::arg("max_tokens") = py::none(), py::arg("temperature") = 0.0, py::arg("top_k") = 0,               \
                 py::arg("top_p") = 1.0, py::arg("min_p") = 0.0, py::arg("repeat_penalty") = 1.0, py::arg("seed") = 0, \
                 py::arg("stop") = py::none(), py::arg("ignore_eos") = false, py::arg("on_text") = py::none(),         \
                 py::arg("lookup") = py::none(), py::arg("draft") = py::none(), py::arg("draft_max") = py::none()

constexpr const char* kSamplingDoc =
    "max_tokens: tokens to sample (default 64, or the context when shorter); temperature 0 is greedy; top_k 0,\n"
    "top_p 1, min_p 0 and repeat_penalty 1 are off; seed seeds the sampler; stop: a string or a list of strings\n"
    "that end the generation (cut from the text); ignore_eos: go on past end-of-sequence tokens; on_text(piece),\n"
    "when given, receives the text as it comes. Speculative decoding (the same text when greedy, the same\n"
    "distribution when sampled): lookup=K drafts up to K tokens by prompt lookup; draft=PATH a draft program of\n"
    "the same vocabulary, loaded once per Runner and path, drafts up to draft_max (default 4). The model computes\n"
    "without the GIL.";

}  // namespace

void bind_runner(py::module_& m) {
  py::class_<GenerationResult>(m, "Generation", "What the last generation of a Runner produced.")
      .def_readonly("text", &GenerationResult::text, "The decoded text (stop strings cut off).")
      .def_readonly("tokens", &GenerationResult::tokens, "The sampled token ids (an end or stop token included).")
      .def_property_readonly(
          "stop_reason", [](const GenerationResult& g) { return stop_reason_name(g.stop_reason); },
          "Why it stopped: eos, stop_token, stop_string, length, context_full or stopped.")
      .def_property_readonly(
          "stats", [](const GenerationResult& g) { return stats_dict(g.stats); },
          "Timings (ms), token counts, speeds and peak memory, as `hfstatic run --stats` prints them.")
      .def("__repr__", [](const GenerationResult& g) {
        return cat("<hfstatic.Generation ", g.tokens.size(), " tokens, stop_reason=", stop_reason_name(g.stop_reason),
                   ">");
      });

  py::class_<Stream, std::shared_ptr<Stream>>(m, "_Stream", "A generation running in its own thread (Runner.stream).")
      .def("next", &Stream::next, "The next piece of text; None once the generation has ended (its error raised).")
      .def("close", &Stream::close, "Stops the generation at its next token and waits for its thread.");
  py::module_::import("atexit").attr("register")(py::cpp_function(&close_all_streams));

  py::class_<PyRunner, std::shared_ptr<PyRunner>>(
      m, "Runner", "Generates text with a program, keeping its context from call to call.")
      .def(py::init(&load_runner), py::arg("path") = py::none(), py::arg("threads") = py::none(), py::kw_only(),
           py::arg("isa") = py::none(), py::arg("active_rows") = py::none(), py::arg("fold_ops") = py::none(),
           py::arg("huge_pages") = py::none(), py::arg("idle_prefetch") = py::none(),
           py::arg("max_buffer_mib") = py::none(),
           "Loads and validates the program at `path` (None: the default program linked into the module) with\n"
           "`threads` compute threads (None: every hardware thread). Raises FormatError or ContractError.\n"
           "Runtime options (None: the environment's setting, as for the hfstatic tool): isa 'scalar', 'avx2',\n"
           "'avx2-vnni', 'avx512', 'avx512-vnni' or 'avx512-vnni-512' caps the kernels' ISA (HFSTATIC_ISA); "
           "active_rows, fold_ops, "
           "huge_pages and\n"
           "idle_prefetch switch the optimisations of HFSTATIC_ACTIVE_ROWS, HFSTATIC_FOLD, HFSTATIC_HUGE_PAGES\n"
           "and HFSTATIC_IDLE_PREFETCH; max_buffer_mib bounds the caches, masks and arenas a program may ask\n"
           "for (default 4x its weights + 512 MiB).")
      .def("generate", generation_method<Prompt>(start_generate), py::arg("prompt"), HFSTATIC_SAMPLING_ARGS,
           (std::string("Continues the context with `prompt` (text, or a list of token ids) and returns the generated\n"
                        "text. A text prompt gets the tokenizer's special tokens (a bos) at the start of the context\n"
                        "only.\n") +
            kSamplingDoc)
               .c_str())
      .def("chat", generation_method<py::sequence>(start_chat), py::arg("messages"), HFSTATIC_SAMPLING_ARGS,
           (std::string(
                "Answers a conversation, a list of {'role', 'content'} dicts rendered with the tokenizer's chat\n"
                "template; the context starts over with the whole conversation. Returns the reply's text.\n") +
            kSamplingDoc)
               .c_str())
      .def("_stream", stream_method<Prompt>(start_generate), py::arg("prompt"), HFSTATIC_SAMPLING_ARGS,
           "Starts generate() in a thread of its own; Runner.stream() iterates the _Stream it returns.")
      .def("_chat_stream", stream_method<py::sequence>(start_chat), py::arg("messages"), HFSTATIC_SAMPLING_ARGS,
           "Starts chat() in a thread of its own; Runner.chat_stream() iterates the _Stream it returns.")
      .def(
          "prefill",
          [](py::object self, const std::vector<int64_t>& ids) {
            PyRunner& r = self.cast<PyRunner&>();
            return logits_view(step(r, [&] { return r.runner->prefill(ids); }), self);
          },
          py::arg("ids"),
          "Feeds token ids after the context (a pending sampled token first) without sampling. Returns the next-token\n"
          "logits as a read-only float32 NumPy array that views the runner's buffer (no copy): valid until the\n"
          "next step.")
      .def(
          "decode",
          [](py::object self, int64_t id) {
            PyRunner& r = self.cast<PyRunner&>();
            return logits_view(step(r, [&] { return r.runner->decode(id); }), self);
          },
          py::arg("id"),
          "Feeds one token with a decode step. Returns the next-token logits as prefill() does (a view, valid until\n"
          "the next step).")
      .def(
          "reset",
          [](PyRunner& r) {
            Busy busy(r);
            r.runner->reset();
          },
          "Forgets the context: the next call starts at position 0.")
      .def(
          "rewind",
          [](PyRunner& r, int64_t n) {
            Busy busy(r);
            if (n < 0) throw UsageError(cat("rewind: ", n, " is negative"));
            refusals_are_usage_errors([&] { r.runner->rewind(size_t(n)); });
          },
          py::arg("n"), "Forgets the last n tokens of the context.")
      .def(
          "stop", [](PyRunner& r) { r.runner->stop(); },
          "Ends the running generation at its next token; safe to call from any thread.")
      .def_property_readonly(
          "position",
          [](PyRunner& r) {
            Busy busy(r);
            return r.runner->position();
          },
          "Tokens the model has seen.")
      .def_property_readonly(
          "context",
          [](PyRunner& r) {
            Busy busy(r);
            return r.runner->context();
          },
          "The context's token ids: those fed and the pending sampled one.")
      .def_property_readonly(
          "model", [](const PyRunner& r) { return model_info(r.runner->model()); },
          "What the runner knows of the model (layers, context, vocabulary, end ids...).")
      .def_property_readonly(
          "tokenizer",
          [](const PyRunner& r) {
            const Tokenizer* t = r.runner->tokenizer();
            return t ? py::cast(TokenizerHandle{std::shared_ptr<const Tokenizer>(r.runner, t)}) : py::none();
          },
          "The program's tokenizer, or None.")
      .def_property_readonly(
          "load_ms", [](const PyRunner& r) { return r.runner->load_ms(); },
          "Milliseconds the load took (program, validation, buffers, tokenizer).")
      .def_property_readonly(
          "last",
          [](PyRunner& r) {
            auto last = r.get_last();
            return last ? py::cast(std::move(*last)) : py::none();
          },
          "The last generate() or chat() result as a Generation (None before the first).");
}

}  // namespace hfstatic::python
