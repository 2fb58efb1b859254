#include "util/proc_stats.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace hfstatic {

namespace {

// A "Key:   123 kB" field of /proc/self/status, in bytes; 0 if absent.
uint64_t status_field(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(key);
  while (std::getline(f, line))
    if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':')
      return uint64_t(std::strtoull(line.c_str() + n + 1, nullptr, 10)) * 1024;
  return 0;
}

}  // namespace

uint64_t peak_rss_bytes() { return status_field("VmHWM"); }
uint64_t current_rss_bytes() { return status_field("VmRSS"); }

std::optional<std::string> read_proc_self(const std::string& name) {
  std::ifstream in("/proc/self/" + name);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace hfstatic
