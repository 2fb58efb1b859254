// HeapAllocator, which backs arenas and state buffers: zero-filled, aligned and writable memory
// on both of its paths (the heap below 1 MiB, anonymous mappings above), and untouched mapped
// pages not resident.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "util/buffer_allocator.h"
#include "util/proc_stats.h"

namespace hfstatic {
namespace {

TEST(HeapAllocator, ZeroFilledAlignedAndWritableOnBothPaths) {
  for (size_t bytes : {size_t(1), size_t(100), size_t(4096), (size_t(1) << 20) - 1, size_t(1) << 20, size_t(3) << 20,
                       (size_t(5) << 20) + 123}) {
    for (size_t alignment : {size_t(16), size_t(64), size_t(4096), size_t(1) << 16}) {
      SCOPED_TRACE(testing::Message() << bytes << " bytes, alignment " << alignment);
      Buffer b(HeapAllocator::instance(), bytes, alignment);
      ASSERT_NE(b.data(), nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % alignment, 0u);
      const uint8_t* p = b.as<uint8_t>();
      for (size_t i = 0; i < bytes; i += 997) ASSERT_EQ(p[i], 0) << "byte " << i;
      EXPECT_EQ(p[bytes - 1], 0);
      std::memset(b.data(), 0x5a, bytes);
      EXPECT_EQ(b.as<uint8_t>()[bytes - 1], 0x5a);
    }
  }
}

TEST(HeapAllocator, LargeBuffersTakeMemoryOnlyWhereWritten) {
  const uint64_t before = current_rss_bytes();
  if (before == 0) GTEST_SKIP() << "resident set size is not readable here";
  const size_t bytes = size_t(256) << 20;
  Buffer b(HeapAllocator::instance(), bytes);
  std::memset(b.data(), 1, size_t(1) << 20);  // the first MiB only
  const uint64_t grown = current_rss_bytes() - before;
  EXPECT_LT(grown, uint64_t(64) << 20) << "a 256 MiB buffer with 1 MiB written made " << (grown >> 20)
                                       << " MiB resident";
}

}  // namespace
}  // namespace hfstatic
