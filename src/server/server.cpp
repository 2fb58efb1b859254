#include "server/server.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <ctime>
#include <random>
#include <thread>

#include <httplib.h>

#include "chat/conversation.h"
#include "runner/drafter.h"
#include "runner/runner.h"
#include "runner/step_scheduler.h"
#include "server/http_server.h"
#include "server/openai.h"
#include "server/prefix_cache.h"
#include "server/server_ops.h"
#include "server/slot_pool.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace hfstatic::server {

using nlohmann::json;

namespace {

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) { send_json(res, e.status, error_body(e)); }

bool same_secret(const std::string& a, const std::string& b) {
  // Length-independent time for equal lengths; a different length is no secret worth hiding.
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

const char* status_error_type(int status) {
  switch (status) {
    case 401: return "invalid_request_error";
    case 404: return "invalid_request_error";
    case 413: return "invalid_request_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

// The response's identity and the JSON of each of its parts, for either endpoint.
struct Reply {
  bool chat = false;
  std::string id, model;
  int64_t created = 0;

  json whole(const GenerationResult& g, const Usage& usage) const {
    return chat ? chat_response(id, created, model, g.text, g.stop_reason, usage)
                : completion_response(id, created, model, g.text, g.stop_reason, usage);
  }
  json piece(const std::string& text, std::optional<StopReason> stop = std::nullopt) const {
    return chat ? chat_chunk(id, created, model, text, stop) : completion_chunk(id, created, model, text, stop);
  }
  json usage(const Usage& usage) const { return usage_chunk(id, created, model, chat, usage); }
};

// What the access log and the metrics learn of a request on the thread that answers it (the
// pre-routing handler, the route's handler, a stream's provider and the logger run on one
// thread, in that order).
struct RequestNote {
  std::chrono::steady_clock::time_point start;
  bool started = false;
  long long prompt_tokens = -1, cached_tokens = -1, completion_tokens = -1;
};
thread_local RequestNote note;

// Counts a generation request in flight while it lives.
class InFlight {
 public:
  explicit InFlight(std::atomic<int>& n) : n_(&n) { n_->fetch_add(1); }
  ~InFlight() { n_->fetch_sub(1); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  std::atomic<int>* n_;
};

// Everything a streamed response needs after the handler returns.
struct StreamJob {
  std::unique_ptr<InFlight> in_flight;
  SlotLease lease;
  Runner* runner = nullptr;
  CompletionRequest request;
  std::vector<int64_t> prompt;
  size_t cached = 0;  // prompt tokens the slot's cache held
  Reply reply;
};

}  // namespace

struct Server::Impl {
  ServerOptions options;
  std::shared_ptr<const Program> program;
  std::unique_ptr<StepScheduler> scheduler;  // with batching; outlives the runners
  std::vector<std::unique_ptr<Runner>> runners;
  std::vector<std::unique_ptr<Drafter>> drafters;  // one per slot; empty without speculation
  std::vector<SlotHistory> histories;              // one per slot: what its cache holds exactly
  const Tokenizer* tokenizer = nullptr;            // runner 0's; const use only, from any thread
  ModelLimits limits;
  std::unique_ptr<SlotPool> pool;
  BoundedHttpServer http;
  std::atomic<bool> stopping{false};
  std::atomic<bool> serving{false};  // inside serve()
  std::atomic<bool> draining{false};
  std::atomic<bool> loaded{false};  // the slots' runners exist (load())
  RunnerOptions runner_options;
  std::atomic<int> in_flight{0};  // generation requests being answered
  ServerMetrics metrics;
  std::unique_ptr<AccessLog> access_log;
  std::atomic<uint64_t> next_id{0};
  uint64_t id_salt = std::random_device{}();

  std::string make_id(const char* prefix) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s-%08llx%08llx", prefix, (unsigned long long)(id_salt & 0xffffffff),
                  (unsigned long long)next_id.fetch_add(1));
    return buf;
  }

  void routes();
  // A completion or chat completion: parse, tokenize, take a slot, then answer whole or stream.
  void generate(const httplib::Request& req, httplib::Response& res, Endpoint endpoint);
  // The request's prompt as tokens, refused (ApiError) when empty or past the context.
  std::vector<int64_t> prompt_tokens(const CompletionRequest& r, Endpoint endpoint) const;
  // A free slot, the one whose cache shares the most of `prompt` first, or a 503 (queue full,
  // shutting down).
  SlotLease take_slot(std::span<const int64_t> prompt);
  // Runs the slot's generation of `prompt`, fed from the `cached` tokens its cache holds, and
  // records what the cache holds after it (forgets it when the generation fails).
  GenerationResult run(size_t slot, std::span<const int64_t> prompt, size_t cached, const GenerationConfig& config,
                       const std::function<void(const std::string&)>& on_text);
  // Streams the job's generation as server-sent events.
  void stream(httplib::Response& res, std::shared_ptr<StreamJob> job);
  // Sleeps options.token_interval (in short steps, so that stop() is prompt).
  void pace() {
    auto left = options.token_interval;
    while (left.count() > 0 && !stopping.load()) {
      auto step = std::min(left, std::chrono::milliseconds(20));
      std::this_thread::sleep_for(step);
      left -= step;
    }
  }
};

Server::Server(std::shared_ptr<const Program> program, ServerOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  if (options.slots < 1) fail("--slots must be at least 1 (got ", options.slots, ")");
  if (options.queue < 0) options.queue = 2 * options.slots;
  if (options.threads <= 0) {
    const int hw = int(std::max(1u, std::thread::hardware_concurrency()));
    options.threads = options.batching ? hw : std::max(1, hw / options.slots);
  }
  s.options = options;
  s.program = std::move(program);
  s.runner_options.threads = options.threads;
  s.runner_options.runtime = options.runtime;
  if (options.lookup < 0 || options.lookup > 64) fail("--lookup must be between 0 and 64 (got ", options.lookup, ")");
  if (options.lookup > 0 && !options.draft.empty()) fail("give only one of --lookup and --draft");
  if (!options.draft.empty() && (options.draft_max < 1 || options.draft_max > 64))
    fail("--draft-max must be between 1 and 64 (got ", options.draft_max, ")");
  s.histories.resize(size_t(options.slots));
  s.pool = std::make_unique<SlotPool>(size_t(options.slots), size_t(options.queue));
  s.access_log = std::make_unique<AccessLog>(options.log_format, options.log_out);
#ifndef _WIN32
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error return, not a signal
#endif
  s.routes();
  if (!options.defer_load) load();
}

Server::~Server() { stop(); }

void Server::load() {
  Impl& s = *impl_;
  if (s.loaded.load()) return;
  const ServerOptions& options = s.options;
  if (batched()) {
    StepSchedulerOptions so;
    so.threads = options.threads;
    so.on_decode_step = [&metrics = s.metrics](size_t rows) { metrics.decode_step(rows); };
    s.scheduler = std::make_unique<StepScheduler>(std::move(so));
    s.runner_options.scheduler = s.scheduler.get();
  }
  const RunnerOptions& ro = s.runner_options;
  for (int i = 0; i < options.slots; ++i) s.runners.push_back(Runner::load(s.program, ro));
  if (options.lookup > 0) {
    for (int i = 0; i < options.slots; ++i) s.drafters.push_back(std::make_unique<PromptLookup>());
  } else if (!options.draft.empty()) {
    auto draft = Program::load(options.draft, options.runtime.huge_pages ? PagePolicy::HugePages : PagePolicy::Plain);
    for (int i = 0; i < options.slots; ++i)
      s.drafters.push_back(std::make_unique<DraftModel>(Runner::load(draft, ro), *s.runners[size_t(i)], options.draft,
                                                        s.program->path()));
  }
  s.tokenizer = s.runners[0]->tokenizer();
  if (!s.tokenizer) fail("this program has no tokenizer; the server takes text prompts only");
  s.limits.max_context = s.runners[0]->model().max_context;
  s.limits.has_chat_template = !s.tokenizer->chat_template().empty();
  s.loaded.store(true);
}

const ServerOptions& Server::options() const { return impl_->options; }
bool Server::batched() const { return impl_->options.batching && impl_->options.slots > 1; }
size_t Server::slots_busy() const { return impl_->pool->busy(); }
size_t Server::queue_waiting() const { return impl_->pool->waiting(); }
size_t Server::in_flight() const { return size_t(std::max(0, impl_->in_flight.load())); }
std::string Server::metrics_text() const {
  return impl_->metrics.text(impl_->pool->slots(), impl_->pool->busy(), impl_->pool->waiting());
}

bool Server::drain(std::chrono::milliseconds timeout) {
  Impl& s = *impl_;
  s.draining.store(true);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (s.in_flight.load() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

int Server::bind() {
  Impl& s = *impl_;
  int port = s.options.port;
  if (port == 0) {
    port = s.http.bind_to_any_port(s.options.host);
    if (port <= 0) fail("cannot bind ", s.options.host, " (any port)");
  } else if (!s.http.bind_to_port(s.options.host, port)) {
    fail("cannot bind ", s.options.host, ":", port, " (in use, or not an address of this machine)");
  }
  s.options.port = port;
  return port;
}

void Server::serve() {
  Impl& s = *impl_;
  s.serving.store(true);
  if (!s.stopping.load()) s.http.listen_after_bind();
  s.serving.store(false);
}

void Server::stop() {
  Impl& s = *impl_;
  s.stopping.store(true);
  s.pool->shutdown();
  if (s.loaded.load())
    for (auto& r : s.runners) r->stop();
  // A serve() that has begun but not yet started listening would miss http.stop(): wait for it.
  while (s.serving.load() && !s.http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  s.http.stop();
}

void Server::Impl::routes() {
  // Connections waiting for a slot and streams each hold a thread; leave room to answer the
  // requests past the queue (503), health checks and bad requests meanwhile.
  const size_t threads = size_t(options.slots + options.queue) + 16;
  http.set_worker_threads(threads);
  http.set_payload_max_length(options.max_body_bytes);
  http.set_read_timeout(options.read_timeout_s, 0);
  http.set_request_timeout(std::chrono::seconds(options.read_timeout_s));
  http.set_write_timeout(options.write_timeout_s, 0);
  http.set_keep_alive_timeout(5);
  http.set_keep_alive_max_count(100);
  http.set_tcp_nodelay(true);
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which would let a second server
  // share the port silently instead of failing to bind.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof yes);
  });

  http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics.request(req.path, res.status);
    if (access_log->enabled()) {
      AccessEntry e{req.remote_addr, req.method, req.path, res.status};
      if (note.started)
        e.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - note.start).count();
      e.prompt_tokens = note.prompt_tokens;
      e.cached_tokens = note.cached_tokens;
      e.completion_tokens = note.completion_tokens;
      access_log->write(e);
    }
    note = RequestNote{};
  });

  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    note = RequestNote{std::chrono::steady_clock::now(), true};
    // Runs before the body is read. --max-body bounds the bytes on the wire only when they come
    // with a Content-Length and unencoded: a chunked body or a compressed one would be read or
    // expanded whole first, so neither is accepted.
    if (req.has_header("Transfer-Encoding") && req.get_header_value("Transfer-Encoding") != "identity") {
      send_error(res, ApiError(411, "Chunked request bodies are not accepted: send the body with a Content-Length", "",
                               "length_required"));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.has_header("Content-Encoding") && req.get_header_value("Content-Encoding") != "identity") {
      send_error(res, ApiError(415,
                               "Content-Encoding '" + req.get_header_value("Content-Encoding").substr(0, 32) +
                                   "' is not accepted: send the body uncompressed",
                               "", "unsupported_encoding"));
      return httplib::Server::HandlerResponse::Handled;
    }
    const bool open = req.path == "/health" || req.path == "/ready" || req.path == "/metrics";
    if (options.api_key.empty() || open) return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (auth.compare(0, prefix.size(), prefix) == 0 && same_secret(auth.substr(prefix.size()), options.api_key))
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, ApiError(401,
                             auth.empty() ? "You didn't provide an API key: send 'Authorization: Bearer KEY'"
                                          : "Incorrect API key provided",
                             "", "invalid_api_key"));
    return httplib::Server::HandlerResponse::Handled;
  });

  // Errors httplib answers itself (no route, body too large, unreadable request) get JSON too.
  http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() || res.is_chunked_content_provider_) return httplib::Server::HandlerResponse::Unhandled;
    std::string message;
    std::string code;
    switch (res.status) {
      case 404:
        message = "Unknown request URL: " + req.method + " " + req.path;
        code = "not_found";
        break;
      case 413:
        message = "The request body is too large";
        code = "request_too_large";
        break;
      case 400: message = "The request could not be read"; break;
      default: message = "HTTP error " + std::to_string(res.status);
    }
    send_json(res, res.status, error_body(ApiError(res.status, message, "", code, status_error_type(res.status))));
    return httplib::Server::HandlerResponse::Handled;
  }));

  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string message = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      message = e.what();
    } catch (...) {}
    send_error(res, ApiError(500, message, "", "internal_error", "server_error"));
  });

  // Liveness: 200 while the process answers at all.
  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200,
              {{"status", stopping.load()   ? "stopping"
                          : draining.load() ? "draining"
                                            : "ok"},
               {"slots", pool->slots()},
               {"slots_busy", pool->busy()},
               {"queue", pool->waiting()},
               {"queue_max", pool->max_queue()}});
  });

  // Readiness: 503 while draining (a load balancer stops sending), 200 otherwise.
  http.Get("/ready", [this](const httplib::Request&, httplib::Response& res) {
    const std::string state = stopping.load()   ? "stopping"
                              : draining.load() ? "draining"
                              : !loaded.load()  ? "loading"
                                                : "ready";
    send_json(res, state == "ready" ? 200 : 503, {{"status", state}});
  });

  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    res.set_content(metrics.text(pool->slots(), pool->busy(), pool->waiting()),
                    "text/plain; version=0.0.4; charset=utf-8");
  });

  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    if (!loaded.load())
      return send_error(res,
                        ApiError(503, "The model is loading; try again shortly", "", "server_loading", "server_error"));
    const int64_t created = int64_t(std::time(nullptr));
    send_json(res, 200,
              {{"object", "list"},
               {"data", json::array({{{"id", options.model_name},
                                      {"object", "model"},
                                      {"created", created},
                                      {"owned_by", "hfstatic"},
                                      {"max_context", limits.max_context}}})}});
  });

  http.Post("/v1/completions",
            [this](const httplib::Request& req, httplib::Response& res) { generate(req, res, Endpoint::Completions); });
  http.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    generate(req, res, Endpoint::ChatCompletions);
  });
}

std::vector<int64_t> Server::Impl::prompt_tokens(const CompletionRequest& r, Endpoint endpoint) const {
  const bool chat = endpoint == Endpoint::ChatCompletions;
  const char* param = chat ? "messages" : "prompt";
  auto too_long = [&](const std::string& count) {
    return ApiError(400,
                    "This model's maximum context length is " + std::to_string(limits.max_context) +
                        " tokens; the prompt has " + count + " tokens",
                    param, "context_length_exceeded");
  };
  // Tokenized only as far as the context can take: a longer prompt is refused early.
  const size_t max_tokens = size_t(limits.max_context);
  std::vector<int64_t> prompt;
  try {
    if (chat) {
      try {
        Conversation conversation(*tokenizer, r.messages, r.template_context);
        bool restart = false;
        prompt = conversation.pending_tokens(restart, max_tokens);
      } catch (const TokenLimitError&) {
        throw;
      } catch (const std::exception& e) {
        throw ApiError(400, std::string("the chat template cannot render these messages: ") + e.what(), "messages");
      }
    } else {
      const std::vector<int32_t> ids =
          tokenizer->encode(r.prompt, /*add_special_tokens=*/true, /*parse_special=*/true, max_tokens);
      prompt.assign(ids.begin(), ids.end());
    }
  } catch (const TokenLimitError&) {
    throw too_long("more than " + std::to_string(max_tokens));
  }
  if (prompt.empty()) throw ApiError(400, "the prompt is empty", param);
  if (int64_t(prompt.size()) > limits.max_context) throw too_long(std::to_string(prompt.size()));
  return prompt;
}

SlotLease Server::Impl::take_slot(std::span<const int64_t> prompt) {
  SlotPool::Outcome outcome;
  SlotPool::Preference longest_prefix;
  if (options.prefix_reuse) longest_prefix = [&](size_t slot) { return histories[slot].shared(prompt); };
  SlotLease lease = pool->acquire(&outcome, std::chrono::hours(24), longest_prefix);
  if (lease) return lease;
  if (outcome == SlotPool::Outcome::QueueFull)
    throw ApiError(503,
                   "The server is busy: all " + std::to_string(pool->slots()) + " slots are generating and " +
                       std::to_string(pool->max_queue()) + " requests wait; try again later",
                   "", "server_overloaded", "server_error");
  throw ApiError(503, "The server is shutting down", "", "server_shutting_down", "server_error");
}

void Server::Impl::generate(const httplib::Request& req, httplib::Response& res, Endpoint endpoint) {
  // Counted before draining is read: drain() sets draining, then waits for this count.
  auto counted = std::make_unique<InFlight>(in_flight);
  try {
    if (draining.load()) throw ApiError(503, "The server is shutting down", "", "server_shutting_down", "server_error");
    if (!loaded.load())
      throw ApiError(503, "The model is loading; try again shortly", "", "server_loading", "server_error");
    CompletionRequest r = parse_completion_request(req.body, endpoint, limits);
    std::vector<int64_t> prompt = prompt_tokens(r, endpoint);
    SlotLease lease = take_slot(prompt);
    Runner& runner = *runners[lease.index()];
    SlotHistory& history = histories[lease.index()];
    if (!options.prefix_reuse) history.clear();
    const size_t cached = history.prepare(runner, prompt);
    if (r.speculative && !drafters.empty()) {
      r.config.drafter = drafters[lease.index()].get();
      r.config.draft_max = options.lookup > 0 ? options.lookup : options.draft_max;
    }
    const bool chat = endpoint == Endpoint::ChatCompletions;
    Reply reply{chat, make_id(chat ? "chatcmpl" : "cmpl"), options.model_name, int64_t(std::time(nullptr))};
    if (!r.stream) {
      std::function<void(const std::string&)> on_text;
      if (options.token_interval.count() > 0) on_text = [this](const std::string&) { pace(); };
      GenerationResult g;
      try {
        g = run(lease.index(), prompt, cached, r.config, on_text);
      } catch (const ModelOutputError& e) {
        throw ApiError(500, e.what(), "", "generation_failed", "server_error");
      } catch (const Error& e) {
        throw ApiError(400, e.what(), chat ? "messages" : "prompt");
      }
      lease.release();
      send_json(res, 200, reply.whole(g, {int64_t(prompt.size()), g.stats.generated_tokens, int64_t(cached)}));
      return;
    }
    auto job = std::make_shared<StreamJob>();
    job->in_flight = std::move(counted);
    job->lease = std::move(lease);
    job->runner = &runner;
    job->request = std::move(r);
    job->prompt = std::move(prompt);
    job->cached = cached;
    job->reply = std::move(reply);
    stream(res, std::move(job));
  } catch (const ApiError& e) {
    send_error(res, e);
  } catch (const std::exception& e) {
    send_error(res, ApiError(500, e.what(), "", "internal_error", "server_error"));
  }
}

GenerationResult Server::Impl::run(size_t slot, std::span<const int64_t> prompt, size_t cached,
                                   const GenerationConfig& config,
                                   const std::function<void(const std::string&)>& on_text) {
  Runner& runner = *runners[slot];
  try {
    const auto t0 = std::chrono::steady_clock::now();
    GenerationResult g = runner.generate_tokens(prompt.subspan(cached), config, {}, on_text);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    histories[slot].update(runner, prompt);
    metrics.generation(prompt.size(), cached, size_t(g.stats.generated_tokens), g.stats.ttft_ms / 1000, seconds);
    note.prompt_tokens = (long long)prompt.size();
    note.cached_tokens = (long long)cached;
    note.completion_tokens = g.stats.generated_tokens;
    return g;
  } catch (...) {
    histories[slot].clear();
    throw;
  }
}

void Server::Impl::stream(httplib::Response& res, std::shared_ptr<StreamJob> job) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider("text/event-stream", [this, job](size_t, httplib::DataSink& sink) {
    Runner& runner = *job->runner;
    const Reply& reply = job->reply;
    bool alive = true;
    auto write = [&](const std::string& s) {
      if (alive && !sink.write(s.data(), s.size())) {
        alive = false;
        runner.stop();  // the client is gone: free the slot at the next token
      }
    };
    auto send = [&](const json& event) { write(sse_event(event)); };
    auto finish = [&] {
      write(sse_done());
      if (alive) sink.done();
      return alive;
    };
    if (reply.chat) send(chat_chunk(reply.id, reply.created, reply.model, "", std::nullopt, /*role_only=*/true));
    GenerationResult g;
    try {
      g = run(job->lease.index(), job->prompt, job->cached, job->request.config, [&](const std::string& piece) {
        if (!alive) return;
        if (options.token_interval.count() > 0) pace();
        send(reply.piece(piece));
      });
    } catch (const std::exception& e) {
      job->lease.release();
      send(error_body(ApiError(500, e.what(), "", "generation_failed", "server_error")));
      return finish();
    }
    job->lease.release();
    if (!alive) return false;
    send(reply.piece("", g.stop_reason));
    if (job->request.include_usage)
      send(reply.usage({int64_t(job->prompt.size()), g.stats.generated_tokens, int64_t(job->cached)}));
    return finish();
  });
}

}  // namespace hfstatic::server
