// The real server on a free loopback port, driven by Python's http.client (client.py): completions,
// chat, streaming framing, concurrency, the queue limit, disconnects, bad requests, the API key,
// and the hfstatic serve command itself.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "chat/chat_template.h"
#include "runner/runner.h"
#include "server/server.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"

namespace hfstatic::server {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr int64_t kMaxContext = 256;

// The tiny qwen2 program (byte-level tokenizer, ChatML template), exported once per binary.
const std::string& program_path() {
  static test::TempDir* dir = new test::TempDir("server");
  static const std::string path = [] {
    GraphOptions g;
    g.prefill_len = 32;
    g.max_context = kMaxContext;
    return test::export_to(test::cached_checkpoint("tiny-qwen2", 1), dir->file("tiny.hfs"), g);
  }();
  return path;
}

std::shared_ptr<const Program> program() {
  static std::shared_ptr<const Program> p = Program::load(program_path());
  return p;
}

// A server running on a thread of its own until destroyed.
class RunningServer {
 public:
  explicit RunningServer(ServerOptions options, std::shared_ptr<const Program> served = program()) {
    options.host = "127.0.0.1";
    options.port = 0;
    if (options.threads == 0) options.threads = 1;
    server_ = std::make_unique<Server>(served, options);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->serve(); });
  }
  ~RunningServer() {
    server_->stop();
    thread_.join();
  }
  int port() const { return port_; }
  Server& server() { return *server_; }

 private:
  std::unique_ptr<Server> server_;
  std::thread thread_;
  int port_ = 0;
};

struct ClientResult {
  int exit_code = -1;
  std::string output;
  json result;  // the last line, when it is JSON
};

// Runs client.py CHECK against a port, bounded by `timeout`.
// client_ops.py runs the checks of prefix reuse, metrics, readiness and drain.
ClientResult client(const std::string& check, int port, const std::vector<std::string>& extra = {}, int timeout_s = 120,
                    const char* script = HFSTATIC_SERVER_CLIENT) {
  std::string cmd = "timeout -k 5 " + std::to_string(timeout_s) + " " HFSTATIC_PYTHON " " + script + " " + check +
                    " --port " + std::to_string(port) + " --max-context " + std::to_string(kMaxContext);
  for (const auto& e : extra) cmd += " '" + e + "'";
  cmd += " 2>&1";
  ClientResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::string last = r.output;
  while (!last.empty() && last.back() == '\n') last.pop_back();
  if (auto nl = last.rfind('\n'); nl != std::string::npos) last = last.substr(nl + 1);
  r.result = json::parse(last, nullptr, false);
  return r;
}

// The text JSON carries for raw model bytes (invalid UTF-8 becomes U+FFFD).
std::string as_json_text(const std::string& raw) {
  return json::parse(json(raw).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
}

TEST(ServerHttp, CompletionsChatModelsAndHealth) {
  RunningServer s(ServerOptions{});
  auto r = client("basic", s.port(), {"--prompt", "Once upon a time", "--max-tokens", "12"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Greedy text through HTTP equals a Runner of its own over the same program.
  RunnerOptions one_thread;
  one_thread.threads = 1;
  auto runner = Runner::load(program(), one_thread);
  GenerationConfig config;
  config.max_new_tokens = 12;
  GenerationResult direct = runner->generate("Once upon a time", config);
  EXPECT_EQ(r.result["completion"]["choices"][0]["text"].get<std::string>(), as_json_text(direct.text));
  EXPECT_EQ(r.result["completion"]["usage"]["prompt_tokens"].get<int64_t>(), direct.stats.prompt_tokens);
  EXPECT_EQ(r.result["completion"]["usage"]["completion_tokens"].get<int64_t>(), int64_t(direct.tokens.size()));
  EXPECT_EQ(r.result["model"], "hfstatic");

  runner->reset();
  std::string chat_prompt =
      apply_chat_template(*runner->tokenizer(), {{"system", "Be brief."}, {"user", "Once upon a time"}},
                          /*add_generation_prompt=*/true);
  GenerationResult direct_chat = runner->generate(chat_prompt, config, {}, /*add_special_tokens=*/false);
  EXPECT_EQ(r.result["chat"]["choices"][0]["message"]["content"].get<std::string>(), as_json_text(direct_chat.text));
  EXPECT_EQ(r.result["chat"]["usage"]["prompt_tokens"].get<int64_t>(), direct_chat.stats.prompt_tokens);
}

// A program with a NaN in its final norm's weights: every completion is a 500 naming the token
// and the position (never padding text), and the server keeps answering.
TEST(ServerHttp, NanLogitsAre500sAndTheServerGoesOn) {
  test::TempDir dir("server-nan");
  const std::string path = dir.file("nan.hfs");
  std::filesystem::copy_file(program_path(), path);
  {
    auto p = Program::load(path);
    const TensorInfo* t = p->container().find("model.norm.weight");
    ASSERT_NE(t, nullptr);
    const size_t offset = size_t(p->container().tensor_data(*t) - p->file_data()) + 3 * dtype_size(t->dtype);
    const uint32_t nan32 = 0x7fc00000u;
    const uint16_t nan16 = 0x7e00;
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(offset));
    if (t->dtype == DType::F32)
      f.write(reinterpret_cast<const char*>(&nan32), 4);
    else
      f.write(reinterpret_cast<const char*>(&nan16), 2);
    ASSERT_TRUE(f.good());
  }
  RunningServer s(ServerOptions{}, Program::load(path));
  auto r = client("nan", s.port());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.result["messages"][0].get<std::string>().find(path), std::string::npos) << r.output;
}

TEST(ServerHttp, StreamingFraming) {
  RunningServer s(ServerOptions{});
  auto r = client("stream", s.port(), {"--max-tokens", "24"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GT(r.result["completion"]["events"].get<int>(), 3);
  EXPECT_GT(r.result["chat"]["events"].get<int>(), 3);
}

TEST(ServerHttp, ConcurrentSlotsMatchSingleRequests) {
  ServerOptions o;
  o.slots = 3;
  RunningServer s(o);
  auto r = client("concurrent", s.port(), {"--requests", "9", "--max-tokens", "48"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["requests"], 9);
  EXPECT_LE(r.result["peak_slots_busy"].get<int>(), 3);
}

TEST(ServerHttp, RequestsPastTheQueueGet503) {
  ServerOptions o;
  o.slots = 1;
  o.queue = 1;
  o.token_interval = 10ms;  // 40 tokens hold the slot for about 0.4 s
  RunningServer s(o);
  auto r = client("queue", s.port(), {"--max-tokens", "40"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_LT(r.result["rejected_in_s"].get<double>(), 1.0);  // rejected at once, not queued
  EXPECT_EQ(r.result["code"], "server_overloaded");
}

TEST(ServerHttp, DisconnectFreesTheSlot) {
  ServerOptions o;
  o.slots = 1;
  o.queue = 0;
  o.token_interval = 20ms;  // 250 tokens would take 5 s
  RunningServer s(o);
  auto r = client("disconnect", s.port(), {"--max-tokens", "250"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_LT(r.result["freed_in_s"].get<double>(), 1.5);
  EXPECT_EQ(s.server().slots_busy(), 0u);
}

TEST(ServerHttp, BadRequestsGetOpenAIErrors) {
  RunningServer s(ServerOptions{});
  auto r = client("bad", s.port());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["prompt past the context"]["code"], "context_length_exceeded");
  EXPECT_EQ(r.result["max_tokens past the context"]["param"], "max_tokens");
  EXPECT_EQ(r.result["n > 1"]["param"], "n");
  EXPECT_EQ(r.result["body over 1 MiB"]["status"], 413);
  EXPECT_EQ(r.result["malformed json"]["code"], "invalid_json");
  EXPECT_EQ(r.result["unknown field"]["param"], "frobnicate");
  EXPECT_EQ(r.result["tool without a name"]["param"], "tools[0].function.name");
  EXPECT_EQ(r.result["tool message without an id"]["param"], "messages[0].tool_call_id");
  EXPECT_EQ(r.result["chat with tools"]["status"], 200);
}

TEST(ServerHttp, PromptsOfMegabytesAreTokenizedOnlyPastTheContext) {
  ServerOptions o;
  o.max_body_bytes = 4 << 20;
  RunningServer s(o);
  auto r = client("huge_prompt", s.port(), {"--prompt-bytes", std::to_string(2 << 20)});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* name : {"completion", "chat"}) {
    const json& e = r.result[name];
    EXPECT_EQ(e["code"], "context_length_exceeded") << name;
    EXPECT_EQ(e["param"], std::string(name) == "chat" ? "messages" : "prompt");
    // Encoded whole, the 419,430 words would be counted; stopped, the count is the limit.
    EXPECT_NE(e["message"].get<std::string>().find("the prompt has more than 256 tokens"), std::string::npos)
        << e["message"];
    EXPECT_LT(e["seconds"].get<double>(), 2.0) << name;
  }
  EXPECT_EQ(r.result["health"], "ok");
}

TEST(ServerHttp, BodiesOfUnknownSizeAreRefusedAndErrorsEchoNoBody) {
  RunningServer s(ServerOptions{});
  auto r = client("framing", s.port());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["chunked"]["code"], "length_required");
  EXPECT_EQ(r.result["gzip"]["code"], "unsupported_encoding");
  EXPECT_LT(r.result["long token"]["message_length"].get<int>(), 400);
}

TEST(ServerHttp, SlowClientsAreDroppedAfterTheRequestTimeout) {
  ServerOptions o;
  o.read_timeout_s = 2;  // per request, not per byte
  RunningServer s(o);
  auto r = client("slow_clients", s.port(), {}, 90);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["health"], "ok");
  // Each of the 40 trickling connections is dropped 2 s after its first byte (bounded only per
  // byte, it would trickle for 30 s); none holds a thread meanwhile.
  EXPECT_LT(r.result["health_wait_s"].get<double>(), 1.0) << r.output;
  EXPECT_EQ(r.result["dropped"].get<int>(), 40) << r.output;
}

TEST(ServerHttp, ConnectionsSendingHalfAHeaderHoldNoThread) {
  ServerOptions o;
  o.read_timeout_s = 2;  // each is dropped after 2 s and comes back at once
  RunningServer s(o);
  // 200 connections against 19 threads that answer requests, for 6 s: three rounds of drops.
  // Read on those threads, /health waited behind them the whole time.
  auto r = client("slow_flood", s.port(), {"--requests", "200", "--seconds", "6"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GE(r.result["connections"].get<int>(), 400) << r.output;  // each was dropped and came back
  EXPECT_GT(r.result["probes"].get<int>(), 10) << r.output;
  EXPECT_LT(r.result["worst_health_s"].get<double>(), 1.0) << r.output;
  EXPECT_LT(r.result["completion_s"].get<double>(), 1.0) << r.output;
}

TEST(ServerHttp, ApiKey) {
  ServerOptions o;
  o.api_key = "sekret";
  RunningServer s(o);
  auto r = client("auth", s.port(), {"--api-key", "sekret"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

TEST(ServerHttp, ServeCommand) {
  auto r = client("cli", 0, {"--cli", HFSTATIC_CLI, "--model", program_path()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["exit"], 0);
}

// Greedy text is the same with a drafter in every slot, per request on or off, and without one.
TEST(ServerHttp, SpeculativeDecodingKeepsTheGreedyText) {
  RunningServer plain(ServerOptions{});
  ServerOptions lookup;
  lookup.lookup = 4;
  lookup.slots = 2;
  RunningServer with_lookup(lookup);
  auto r =
      client("speculative", with_lookup.port(), {"--plain-port", std::to_string(plain.port()), "--max-tokens", "40"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["bad_param"], "speculative");
  EXPECT_FALSE(r.result["completion"].get<std::string>().empty());

  // A draft program of the same vocabulary (tiny, against tiny-qwen2) in each slot.
  static test::TempDir* dir = new test::TempDir("server-draft");
  GraphOptions g;
  g.prefill_len = 32;
  g.max_context = kMaxContext;
  ServerOptions draft;
  draft.draft = test::export_to(test::cached_checkpoint("tiny", 1), dir->file("draft.hfs"), g);
  draft.draft_max = 3;
  draft.slots = 2;  // the draft runners step through the slots' scheduler too
  draft.batching = true;
  RunningServer with_draft(draft);
  r = client("speculative", with_draft.port(), {"--plain-port", std::to_string(plain.port()), "--max-tokens", "40"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

TEST(ServerHttp, ADraftOfAnotherVocabularyIsRefusedNamingBothPrograms) {
  static test::TempDir* dir = new test::TempDir("server-demo");
  GraphOptions g;
  g.prefill_len = 32;
  g.max_context = kMaxContext;
  ServerOptions o;
  o.threads = 1;
  o.draft = test::export_to(std::string(HFSTATIC_SOURCE_DIR) + "/models/demo", dir->file("demo.hfs"), g);
  const std::string message = test::error_of([&] { Server s(program(), o); });
  EXPECT_NE(message.find(o.draft), std::string::npos) << message;
  EXPECT_NE(message.find(program_path()), std::string::npos) << message;
  o.lookup = 2;
  EXPECT_NE(test::error_of([&] { Server s(program(), o); }).find("only one of --lookup and --draft"),
            std::string::npos);
}

// A multi-turn chat and its variants through the API: a server that reuses its slots' caches
// answers as one that prefills every prompt whole, and says how many tokens it reused.
TEST(ServerHttp, PrefixReuseAnswersAsAColdServer) {
  ServerOptions reuse;
  RunningServer warm(reuse);
  ServerOptions plain;
  plain.prefix_reuse = false;
  RunningServer cold(plain);
  auto r = client("prefix_reuse", warm.port(),
                  {"--plain-port", std::to_string(cold.port()), "--requests", "4", "--max-tokens", "8"}, 120,
                  HFSTATIC_SERVER_OPS_CLIENT);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["cached"][0], 0);
  EXPECT_GT(r.result["cached"][3].get<int>(), r.result["cached"][1].get<int>());  // the history grows
  EXPECT_GT(r.result["shorter"].get<int>(), 0);
  EXPECT_GT(r.result["other_system"].get<int>(), 0);  // the template's tokens before the system text
  EXPECT_LT(r.result["other_system"].get<int>(), r.result["shorter"].get<int>());
  EXPECT_GT(r.result["stream_cached"].get<int>(), 0);
}

// GET /metrics parses as the Prometheus text format and counts the requests made before it.
TEST(ServerHttp, MetricsParseAndCount) {
  ServerOptions o;
  o.slots = 2;
  o.api_key = "k";  // /metrics, /health and /ready need no key
  RunningServer s(o);
  auto r = client("metrics", s.port(), {"--requests", "2", "--api-key", "k"}, 120, HFSTATIC_SERVER_OPS_CLIENT);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GT(r.result["samples"].get<int>(), 30);
  EXPECT_NE(s.server().metrics_text().find("hfstatic_generations_total 3\n"), std::string::npos);
}

// Continuous batching: concurrent greedy requests on 3 slots whose decode steps run together
// answer as the same requests one at a time on slots that step alone, and /metrics counts steps
// of several rows.
TEST(ServerHttp, BatchedSlotsAnswerAsSlotsAlone) {
  ServerOptions batched;
  batched.batching = true;
  batched.slots = 3;
  batched.threads = 2;
  RunningServer s(batched);
  ServerOptions alone = batched;
  alone.batching = false;
  alone.threads = 1;
  RunningServer plain(alone);
  EXPECT_TRUE(s.server().batched());
  EXPECT_FALSE(plain.server().batched());
  auto r = client("batching", s.port(),
                  {"--plain-port", std::to_string(plain.port()), "--requests", "6", "--max-tokens", "120"}, 120,
                  HFSTATIC_SERVER_OPS_CLIENT);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GT(r.result["batched_steps"].get<double>(), 0) << r.output;
}

// SIGTERM to `hfstatic serve`: /ready 503 and new requests refused at once, every request in
// flight answered whole, exit 0; a drain past --drain-timeout still exits 0, bounded.
TEST(ServerHttp, SigtermDrainsWithoutLosingRequests) {
  auto r = client("drain", 0, {"--cli", HFSTATIC_CLI, "--model", program_path()}, 120, HFSTATIC_SERVER_OPS_CLIENT);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["exit"], 0);
  EXPECT_LT(r.result["refused_in_s"].get<double>(), 1.0);
  EXPECT_GE(r.result["log_lines"].get<int>(), 5);
  EXPECT_EQ(r.result["bounded_exit"], 0);
  EXPECT_LT(r.result["bounded_s"].get<double>(), 3.0);  // 200 tokens at 20 ms would take 4 s
}

// Readiness: 503 "loading" while the slots load (the port open already), then 200.
TEST(ServerHttp, ReadyOnceLoaded) {
  ServerOptions o;
  o.defer_load = true;
  RunningServer s(o);
  auto r = client("ready", s.port(), {"--state", "loading"}, 60, HFSTATIC_SERVER_OPS_CLIENT);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  s.server().load();
  r = client("ready", s.port(), {"--state", "ready"}, 60, HFSTATIC_SERVER_OPS_CLIENT);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["completion"], 200);
}

TEST(ServerHttp, BindFailureIsAnError) {
  RunningServer a(ServerOptions{});
  ServerOptions o;
  o.port = a.port();
  o.threads = 1;
  Server b(program(), o);
  EXPECT_THROW(b.bind(), Error);
}

}  // namespace
}  // namespace hfstatic::server
