// Helpers of the hostile-input tests: raw safetensors containers and error capture.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "test_support.h"
#include "util/error.h"

namespace hfstatic::hostile {

inline void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
}

// 8-byte length (the real one unless `claimed`), header text padded to a multiple of 8, data.
inline std::vector<uint8_t> container(std::string header, const std::vector<uint8_t>& data = {},
                                      std::optional<uint64_t> claimed = std::nullopt) {
  while ((8 + header.size()) % 8 != 0) header.push_back(' ');
  std::vector<uint8_t> out;
  put_u64(out, claimed.value_or(header.size()));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

inline std::string nested_arrays(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

using test::error_of;

}  // namespace hfstatic::hostile
