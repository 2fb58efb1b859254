#include "server/server_ops.h"

#include <chrono>
#include <ctime>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace hfstatic::server {

LogFormat parse_log_format(const std::string& s) {
  if (s == "none") return LogFormat::None;
  if (s == "text") return LogFormat::Text;
  if (s == "json") return LogFormat::Json;
  fail("--log-format must be none, text or json (got '", s.substr(0, 32), "')");
}

ServerMetrics::ServerMetrics() {
  auto& r = registry_;
  r.counter("hfstatic_http_requests_total", "HTTP requests answered, by route and status.", {"route", "status"});
  r.counter("hfstatic_prompt_tokens_total", "Prompt tokens of generations, reused ones included.");
  r.counter("hfstatic_prompt_tokens_cached_total", "Prompt tokens a slot's cache held already (prefix reuse).");
  r.counter("hfstatic_generated_tokens_total", "Tokens sampled.");
  r.counter("hfstatic_generations_total", "Generations run.");
  r.counter("hfstatic_prefix_reuse_hits_total", "Generations that reused a prefix of their prompt.");
  r.histogram("hfstatic_time_to_first_token_seconds", "From a generation's start to its first sampled token.",
              {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30});
  r.histogram("hfstatic_time_per_output_token_seconds", "Time per sampled token after the first.",
              {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1});
  r.histogram("hfstatic_decode_batch_rows", "Sequences a decode step advanced together (with batching).",
              {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128, 256});
  r.counter("hfstatic_batched_decode_steps_total", "Decode steps that advanced more than one sequence.");
  r.gauge("hfstatic_slots", "Slots (concurrent generations).");
  r.gauge("hfstatic_slots_busy", "Slots generating.");
  r.gauge("hfstatic_queue_length", "Requests waiting for a slot.");
}

void ServerMetrics::request(const std::string& path, int status) {
  static const char* known[] = {"/v1/completions", "/v1/chat/completions", "/v1/models", "/health", "/ready",
                                "/metrics"};
  std::string route = "other";
  for (const char* k : known)
    if (path == k) route = k;
  registry_.add("hfstatic_http_requests_total", 1, {route, std::to_string(status)});
}

void ServerMetrics::generation(size_t prompt_tokens, size_t cached_tokens, size_t generated_tokens, double ttft_s,
                               double seconds) {
  auto& r = registry_;
  r.add("hfstatic_generations_total");
  r.add("hfstatic_prompt_tokens_total", double(prompt_tokens));
  r.add("hfstatic_prompt_tokens_cached_total", double(cached_tokens));
  r.add("hfstatic_generated_tokens_total", double(generated_tokens));
  if (cached_tokens > 0) r.add("hfstatic_prefix_reuse_hits_total");
  if (generated_tokens == 0) return;
  r.observe("hfstatic_time_to_first_token_seconds", ttft_s);
  if (generated_tokens > 1)
    r.observe("hfstatic_time_per_output_token_seconds", std::max(0.0, seconds - ttft_s) / double(generated_tokens - 1));
}

void ServerMetrics::decode_step(size_t rows) {
  registry_.observe("hfstatic_decode_batch_rows", double(rows));
  if (rows > 1) registry_.add("hfstatic_batched_decode_steps_total");
}

std::string ServerMetrics::text(size_t slots, size_t busy, size_t waiting) {
  registry_.set("hfstatic_slots", double(slots));
  registry_.set("hfstatic_slots_busy", double(busy));
  registry_.set("hfstatic_queue_length", double(waiting));
  return registry_.text();
}

namespace {

// The client's path as a log shows it: at most 256 bytes, control bytes and quotes as '?'.
std::string loggable(const std::string& path) {
  std::string out = path.substr(0, 256);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == '"' || c == 0x7f) c = '?';
  return out;
}

}  // namespace

std::string access_line(LogFormat format, const AccessEntry& entry) {
  AccessEntry e = entry;
  e.path = loggable(e.path);
  e.method = loggable(e.method);
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.1f", e.ms);
  if (format == LogFormat::Text) {
    std::string line = e.remote + " \"" + e.method + " " + e.path + "\" " + std::to_string(e.status) + " " + ms + " ms";
    if (e.prompt_tokens >= 0)
      line += " prompt " + std::to_string(e.prompt_tokens) + " cached " + std::to_string(e.cached_tokens) +
              " completion " + std::to_string(e.completion_tokens);
    return line + "\n";
  }
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const long long milli =
      (long long)(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char when[64];
  std::snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%03lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, milli);
  nlohmann::json j = {{"time", when},   {"remote", e.remote}, {"method", e.method},
                      {"path", e.path}, {"status", e.status}, {"ms", std::stod(ms)}};
  if (e.prompt_tokens >= 0) {
    j["prompt_tokens"] = e.prompt_tokens;
    j["cached_tokens"] = e.cached_tokens;
    j["completion_tokens"] = e.completion_tokens;
  }
  // A path is the client's bytes: invalid UTF-8 becomes U+FFFD rather than an exception.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void AccessLog::write(const AccessEntry& e) {
  if (!enabled()) return;
  const std::string line = access_line(format_, e);
  std::lock_guard<std::mutex> lock(mutex_);
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace hfstatic::server
