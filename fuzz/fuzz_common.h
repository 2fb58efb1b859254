// Helpers shared by the libFuzzer harnesses (see docs/reliability.md).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hfstatic::fuzz {

// Parts of an input separated by kDelimiter; the harnesses that read several files from one
// input (config.json, a safetensors shard, the shard index) take them in this order.
inline constexpr std::string_view kDelimiter = "\n=====hfstatic-part=====\n";

inline std::vector<std::string_view> split_parts(const uint8_t* data, size_t size, size_t max_parts) {
  std::string_view all(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    size_t at = all.find(kDelimiter);
    if (at == std::string_view::npos) break;
    parts.push_back(all.substr(0, at));
    all.remove_prefix(at + kDelimiter.size());
  }
  parts.push_back(all);
  return parts;
}

}  // namespace hfstatic::fuzz
