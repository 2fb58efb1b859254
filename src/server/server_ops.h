// The server's operations side: its Prometheus metrics (GET /metrics) and its access log lines.
#pragma once
#include <cstddef>
#include <cstdio>
#include <mutex>
#include <string>

#include "server/metrics.h"

namespace hfstatic::server {

enum class LogFormat { None, Text, Json };
// "none", "text", "json"; throws Error naming the choices for anything else.
LogFormat parse_log_format(const std::string& s);

class ServerMetrics {
 public:
  ServerMetrics();
  // A response: counted by route (a known route, else "other", so that clients cannot grow the
  // series) and status.
  void request(const std::string& path, int status);
  // A generation's prompt (reused tokens among them), its sampled tokens and times.
  void generation(size_t prompt_tokens, size_t cached_tokens, size_t generated_tokens, double ttft_s, double seconds);
  // A decode step of `rows` sequences batched together (with batching).
  void decode_step(size_t rows);
  // The exposition, with the slot and queue gauges as they are now.
  std::string text(size_t slots, size_t busy, size_t waiting);
  const MetricsRegistry& registry() const { return registry_; }

 private:
  MetricsRegistry registry_;
};

// One access log line (with its newline): `text` is `ADDR "METHOD PATH" STATUS MS`, `json` an
// object of time, remote, method, path, status, ms and, for generations, the tokens.
struct AccessEntry {
  std::string remote, method, path;
  int status = 0;
  double ms = 0;
  long long prompt_tokens = -1, cached_tokens = -1, completion_tokens = -1;  // -1: not a generation
};
std::string access_line(LogFormat format, const AccessEntry& e);

// Writes whole lines to a stream from any thread.
class AccessLog {
 public:
  AccessLog(LogFormat format, std::FILE* out) : format_(format), out_(out) {}
  bool enabled() const { return format_ != LogFormat::None && out_; }
  void write(const AccessEntry& e);

 private:
  LogFormat format_;
  std::FILE* out_;
  std::mutex mutex_;
};

}  // namespace hfstatic::server
