// The OpenAI-compatible HTTP server: POST /v1/completions, POST /v1/chat/completions,
// GET /v1/models, GET /health. One program loaded once, N slots each with its own Runner over
// it (their decode steps batched together), a bounded queue in front of them.
#pragma once
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "executor/runtime_options.h"
#include "format/program.h"
#include "server/server_ops.h"

namespace hfstatic::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;      // 0: any free port (see bind())
  int slots = 1;        // concurrent generations, one Runner each
  int queue = -1;       // requests waiting for a slot; -1: 2 * slots
  std::string api_key;  // non-empty: /v1/* require "Authorization: Bearer <api_key>"
  // Compute threads: with batching, of the one pool every slot's steps run on (0: hardware
  // threads); without, of each slot's own pool (0: hardware threads / slots, at least 1).
  int threads = 0;
  size_t max_body_bytes = 1 << 20;      // larger request bodies get 413
  std::string model_name = "hfstatic";  // the id of /v1/models and of every response
  int read_timeout_s = 10;              // how long a client may take to send a whole request
  int write_timeout_s = 10;             // how long a client may take to read a piece of the response
  // Minimum time between two generated tokens of a request (0: none). Paces generation for
  // demonstrations and for tests that need a request to hold its slot for a while.
  std::chrono::milliseconds token_interval{0};
  // With slots > 1, every slot's model steps run through one StepScheduler on one pool: the
  // decode steps of all slots that are decoding run as one batch (src/runner/step_scheduler.h).
  // false (the default): each slot steps alone on a pool of its own; on a host whose decode is
  // bound by arithmetic, slots stepping alone on a thread each get more done (docs/performance.md
  // "Server under load").
  bool batching = false;
  // A request whose prompt starts with tokens a free slot's cache holds takes that slot and feeds
  // only the rest (src/server/prefix_cache.h); false: every request starts from position 0.
  bool prefix_reuse = true;
  // The constructor loads nothing: load() creates the slots' runners, and until it has, /ready
  // answers 503 "loading" and completions 503 (server_loading) while serve() already answers.
  bool defer_load = false;
  // Access log: a line per answered request (text or JSON) written to log_out.
  LogFormat log_format = LogFormat::None;
  std::FILE* log_out = stderr;
  RuntimeOptions runtime;  // how the slots' runners run the program
  // Speculative decoding in every slot, each with a drafter of its own: prompt lookup of up to
  // `lookup` tokens (0: off), or the draft program at `draft` (empty: none) proposing up to
  // draft_max. Not both. A request's "speculative": false turns it off for that request.
  int64_t lookup = 0;
  std::string draft;
  int64_t draft_max = 4;
};

class Server {
 public:
  // Creates the slots' runners over `program`, and their drafters (throws Error when either
  // cannot be run, or when the draft's vocabulary differs); with options.defer_load, load() does.
  Server(std::shared_ptr<const Program> program, ServerOptions options);
  // Creates the runners and drafters when the constructor did not (throws Error as it does);
  // may run on a thread of its own while serve() answers. Once only; later calls do nothing.
  void load();
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds options.host:options.port; returns the bound port. Throws Error when it cannot.
  int bind();
  // Serves until stop(); call after bind(). Returns once every connection is done.
  void serve();
  // Thread-safe: stops accepting, ends running generations at their next token, wakes the queue.
  void stop();
  // Thread-safe: /ready answers 503 from now on and new generation requests get 503; waits for
  // the requests in flight (queued, generating, streaming) to finish, at most `timeout`. True
  // when they all did. stop() is still the caller's to call.
  bool drain(std::chrono::milliseconds timeout);

  const ServerOptions& options() const;
  bool batched() const;  // the slots' steps run through one scheduler (batching, slots > 1)
  size_t slots_busy() const;
  size_t queue_waiting() const;
  size_t in_flight() const;  // generation requests being answered (queued ones included)
  std::string metrics_text() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hfstatic::server
