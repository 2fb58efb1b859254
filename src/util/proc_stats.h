// What Linux's /proc says about this process; every reader of /proc/self lives here.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace hfstatic {

// Peak resident set size (VmHWM of /proc/self/status), bytes; 0 if unknown.
uint64_t peak_rss_bytes();
// Current resident set size (VmRSS), bytes; 0 if unknown.
uint64_t current_rss_bytes();
// The text of /proc/self/NAME ("smaps", "status", ...); nullopt when it cannot be read.
std::optional<std::string> read_proc_self(const std::string& name);

}  // namespace hfstatic
