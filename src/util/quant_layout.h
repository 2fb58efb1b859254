// Where the bytes of a quantized weight row lie (docs/program-format.md, "Quantized weights"):
// shared by the exporter that writes them and the kernels that read them.
//
// A row of `groups` groups (each `group_bytes` bytes: the group's int8 values, or its int4
// values two a byte) is stored in blocks of kQuantBlockGroups groups, the block's groups
// interleaved kQuantChunk bytes at a time: bytes 4c .. 4c + 3 of group j of a block lie at
// 32c + 4j from the block's start, so one 32-byte load holds four bytes of each of the eight
// groups. The groups after the last whole block follow one another.
#pragma once
#include <cstdint>

namespace hfstatic {

inline constexpr int64_t kQuantBlockGroups = 8;
inline constexpr int64_t kQuantChunk = 4;

// Groups of a row of `groups` stored in whole interleaved blocks.
constexpr int64_t quant_blocked_groups(int64_t groups) { return groups / kQuantBlockGroups * kQuantBlockGroups; }

// Offset in its row of byte b (0 <= b < group_bytes) of group g.
constexpr int64_t quant_byte_offset(int64_t group_bytes, int64_t groups, int64_t g, int64_t b) {
  if (g >= quant_blocked_groups(groups)) return g * group_bytes + b;
  const int64_t block = g / kQuantBlockGroups, j = g % kQuantBlockGroups;
  return block * kQuantBlockGroups * group_bytes + b / kQuantChunk * (kQuantBlockGroups * kQuantChunk) +
         j * kQuantChunk + b % kQuantChunk;
}

}  // namespace hfstatic
