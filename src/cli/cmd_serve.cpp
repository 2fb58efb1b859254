// hfstatic serve: an OpenAI-compatible HTTP server over one program (see src/server/README.md).
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "cli/args.h"
#include "cli/runtime_flags.h"
#include "cli/speculation.h"
#include "frontend/default_program.h"
#include "kernels/thread_pool.h"
#include "server/server.h"

namespace hfstatic::cli {
namespace {

int run_serve(const std::vector<std::string>& argv) {
  Args args(
      argv,
      {"-m|--model", "--host", "--port", "--slots", "--queue", "--api-key", "-t|--threads", "--alias", "--max-body",
       "--drain-timeout", "--log-format", "--token-interval", kMaxBufferFlag, kLookupFlag, kDraftFlag, kDraftMaxFlag},
      {"--no-prefix-reuse", "--batching"});
  args.expect_positional(0, "");
  server::ServerOptions options;
  options.host = args.get_or("--host", "127.0.0.1");
  options.port = int(args.get_int("--port", 8080, 0, 65535));
  options.slots = int(args.get_int("--slots", 1, 1, 256));
  options.queue = int(args.get_int("--queue", 2 * options.slots, 0, 4096));
  options.api_key = args.get_or("--api-key", "");
  options.threads = int(args.get_int("--threads", 0, 0, ThreadPool::kMaxThreads));
  options.max_body_bytes = size_t(args.get_int("--max-body", 1 << 20, 1024, int64_t(1) << 30));
  if (args.has("--api-key") && options.api_key.empty()) throw UsageError{"flag --api-key: the key is empty"};
  options.prefix_reuse = !args.has("--no-prefix-reuse");
  options.batching = args.has("--batching");
  options.token_interval = std::chrono::milliseconds(args.get_int("--token-interval", 0, 0, 10000));
  const int64_t drain_timeout_s = args.get_int("--drain-timeout", 30, 0, 3600);
  try {
    options.log_format = server::parse_log_format(args.get_or("--log-format", "text"));
  } catch (const Error& e) {
    throw UsageError{std::string("flag ") + e.what()};
  }
  options.runtime = runtime_options(args);
  const Speculation speculation = speculation_flags(args);
  options.lookup = speculation.lookup;
  options.draft = speculation.draft.value_or("");
  options.draft_max = speculation.draft_max;

  std::shared_ptr<const Program> program;
  if (auto model = args.get("--model")) {
    program = Program::load(*model, options.runtime.huge_pages ? PagePolicy::HugePages : PagePolicy::Plain);
    options.model_name = std::filesystem::path(*model).stem().string();
  } else {
    program = frontend::default_program();
    options.model_name = "default";
  }
  if (auto alias = args.get("--alias")) options.model_name = *alias;

  // SIGINT and SIGTERM stop the server from a thread of its own (not from a signal handler);
  // blocked before any other thread starts, so that every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR2);  // sent by this function to end the waiter
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // The port opens first: /ready answers 503 "loading" until the slots are loaded.
  options.defer_load = true;
  server::Server server(program, options);
  const int port = server.bind();
  const int slots = server.options().slots, threads = server.options().threads;
  std::printf("hfstatic serve: %s on http://%s:%d (%d slot%s, queue %d, %d thread%s %s)\n", options.model_name.c_str(),
              options.host.c_str(), port, slots, slots == 1 ? "" : "s", server.options().queue, threads,
              threads == 1 ? "" : "s", server.batched() ? "shared, decode steps batched" : "per slot");
  std::fflush(stdout);

  // A signal drains: /ready turns 503, new generation requests get 503, the ones in flight
  // finish (for at most --drain-timeout seconds), then the server stops and the command exits 0.
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig != SIGUSR2) {
      std::fprintf(stderr, "hfstatic serve: draining (signal %d; %zu requests in flight, at most %llds)\n", sig,
                   server.in_flight(), (long long)drain_timeout_s);
      const bool drained = server.drain(std::chrono::seconds(drain_timeout_s));
      std::fprintf(stderr, "hfstatic serve: stopping (%s)\n",
                   drained ? "every request finished" : "the drain timed out; generations end at their next token");
      server.stop();
    }
  });
  std::exception_ptr load_error;
  std::thread loader([&] {
    try {
      const auto t0 = std::chrono::steady_clock::now();
      server.load();
      std::fprintf(stderr, "hfstatic serve: ready (slots loaded in %.0f ms)\n",
                   std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    } catch (...) {
      load_error = std::current_exception();
      server.stop();
    }
  });
  server.serve();
  loader.join();
  // serve() also returns when listening fails; end the waiter either way.
  pthread_kill(waiter.native_handle(), SIGUSR2);
  waiter.join();
  if (load_error) std::rethrow_exception(load_error);
  return kExitOk;
}

}  // namespace

HFSTATIC_COMMAND(
    "serve", "serve a program over an OpenAI-compatible HTTP API (the embedded default without -m)",
    "[-m FILE] [--host 127.0.0.1] [--port 8080] [--slots N] [--queue N (default 2*slots)] [--api-key KEY]\n"
    "       [-t THREADS (each slot's own; default hardware threads / slots)] [--alias NAME]\n"
    "       [--max-body BYTES (default 1 MiB)]\n"
    "       [--batching (the slots' decode steps run as one batch on THREADS shared; default all)]\n"
    "       [--no-prefix-reuse (prefill every prompt from its first token)]\n"
    "       [--drain-timeout S (on SIGTERM/SIGINT, wait S seconds for requests in flight; default 30)]\n"
    "       [--log-format text|json|none (access log on stderr; default text)]\n"
    "       [--token-interval MS (at least MS between two tokens of a request: pacing for demonstrations)]\n"
    "       [--max-buffer-mib N (caches and buffers per slot; default 4x the weights + 512)]\n"
    "       [--lookup K (prompt lookup drafts up to K tokens) | --draft FILE [--draft-max K (default 4)]]\n"
    "       (speculative decoding in every slot; a request's \"speculative\": false turns it off)",
    run_serve);

}  // namespace hfstatic::cli
