// Huge-page advice and the smaps reading that reports how much of a mapping huge pages back
// (the weights' mapping and the bandwidth probe's buffer in `hfstatic bench`).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "bench/bench.h"
#include "test_support.h"
#include "util/huge_pages.h"
#include "util/mapped_file.h"

namespace hfstatic {
namespace {

// Three mappings as Linux writes them; the middle one is a file mapping partly in PMD pages.
const char* kSmaps =
    "55d0c0000000-55d0c0021000 rw-p 00000000 00:00 0                          [heap]\n"
    "Size:                132 kB\n"
    "Rss:                  64 kB\n"
    "AnonHugePages:         0 kB\n"
    "7f0000000000-7f0000600000 r--p 00000000 fe:00 1234                       /tmp/a b-c/model.hfs\n"
    "Size:               6144 kB\n"
    "KernelPageSize:        4 kB\n"
    "Rss:                5000 kB\n"
    "AnonHugePages:         0 kB\n"
    "ShmemPmdMapped:        0 kB\n"
    "FilePmdMapped:      4096 kB\n"
    "VmFlags: rd mr mw me hg\n"
    "7f0000600000-7f0040600000 rw-p 00000000 00:00 0 \n"
    "Size:            1048576 kB\n"
    "Rss:             1048576 kB\n"
    "AnonHugePages:   1046528 kB\n"
    "FilePmdMapped:         0 kB\n";

TEST(PageUsage, ReadsTheMappingThatHoldsTheAddress) {
  auto u = parse_page_usage(kSmaps, 0x7f0000123456);
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->size, uint64_t(6) << 20);
  EXPECT_EQ(u->resident, uint64_t(5000) << 10);
  EXPECT_EQ(u->huge, uint64_t(4) << 20);  // FilePmdMapped only: the next mapping's lines are not its own
}

TEST(PageUsage, AnonymousHugePagesCountAndTheEndIsExclusive) {
  auto u = parse_page_usage(kSmaps, 0x7f0000600000);  // the file mapping's end: the next one's start
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->size, uint64_t(1) << 30);
  EXPECT_EQ(u->huge, uint64_t(1046528) << 10);
  auto heap = parse_page_usage(kSmaps, 0x55d0c0000000);
  ASSERT_TRUE(heap.has_value());
  EXPECT_EQ(heap->resident, uint64_t(64) << 10);
  EXPECT_EQ(heap->huge, 0u);
}

TEST(PageUsage, NoMappingHoldsTheAddress) {
  EXPECT_FALSE(parse_page_usage(kSmaps, 0x1000).has_value());
  EXPECT_FALSE(parse_page_usage(kSmaps, 0x7f0040600000).has_value());
  EXPECT_FALSE(parse_page_usage("", 0x7f0000000000).has_value());
  EXPECT_FALSE(parse_page_usage("not smaps\nRss: 4 kB\n", 0x7f0000000000).has_value());
}

TEST(PageUsage, OfAFileThisProcessMaps) {
  test::TempDir dir("huge_pages");
  const std::string path = dir.path() + "/data.bin";
  const size_t bytes = (size_t(3) << 20) + 5;
  {
    std::ofstream out(path, std::ios::binary);
    std::vector<char> data(bytes, 7);
    out.write(data.data(), std::streamsize(data.size()));
  }
  MappedFile f = MappedFile::open(path, PagePolicy::HugePages);
  unsigned sum = 0;
  for (size_t i = 0; i < f.size(); i += 4096) sum += f.data()[i];
  EXPECT_EQ(sum, 7u * unsigned((bytes + 4095) / 4096));
  auto u = page_usage(f.data() + 12345);
  if (!u) GTEST_SKIP() << "/proc/self/smaps is not readable here";
  EXPECT_GE(u->size, bytes);
  EXPECT_EQ(u->resident, u->size) << "every page was read";
  EXPECT_LE(u->huge, u->resident);
}

TEST(PageUsage, BandwidthProbeReportsAFraction) {
  bench::BandwidthProbe probe(nullptr, uint64_t(16) << 20);
  auto fraction = probe.huge_page_fraction();
  if (!fraction) GTEST_SKIP() << "/proc/self/smaps is not readable here";
  EXPECT_GE(*fraction, 0.0);
  EXPECT_LE(*fraction, 1.0);
}

TEST(WorthRereading, LargeMappingsMostlyInSmallPages) {
  const uint64_t MiB = uint64_t(1) << 20;
  EXPECT_TRUE(worth_rereading({1024 * MiB, 1024 * MiB, 0}));
  EXPECT_TRUE(worth_rereading({1024 * MiB, 40 * MiB, 8 * MiB}));  // sampled: one small folio per 2 MiB
  EXPECT_TRUE(worth_rereading({1024 * MiB, 1024 * MiB, 511 * MiB}));
  EXPECT_FALSE(worth_rereading({1024 * MiB, 1024 * MiB, 512 * MiB}));
  EXPECT_FALSE(worth_rereading({1024 * MiB, 1024 * MiB, 1024 * MiB}));
  EXPECT_FALSE(worth_rereading({63 * MiB, 63 * MiB, 0}));  // too small to matter
  EXPECT_TRUE(worth_rereading({64 * MiB, 64 * MiB, 0}));
}

// A file cached in 4 KiB folios (written 4 KiB at a time, then written back) is what
// MappedFile::open drops and maps again where the kernel can bring it back in huge folios:
// either way the bytes are the file's.
TEST(MappedFile, AFileCachedInSmallPagesReadsBackIntact) {
  test::TempDir dir("huge_pages");
  const std::string path = dir.path() + "/small_folios.bin";
  const size_t bytes = (size_t(64) << 20) + 12345;
  auto byte_at = [](size_t i) { return uint8_t((i * 2654435761u) >> 13); };
  {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    std::vector<char> block(4096);
    for (size_t at = 0; at < bytes; at += block.size()) {
      const size_t n = std::min(block.size(), bytes - at);
      for (size_t i = 0; i < n; ++i) block[i] = char(byte_at(at + i));
      ASSERT_EQ(::write(fd, block.data(), n), ssize_t(n));
    }
    ASSERT_EQ(::fsync(fd), 0);  // dirty pages could not be dropped
    ::close(fd);
  }
  MappedFile f = MappedFile::open(path, PagePolicy::HugePages);
  ASSERT_EQ(f.size(), bytes);
  size_t mismatches = 0;
  for (size_t i = 0; i < bytes; ++i) mismatches += f.data()[i] != byte_at(i);
  EXPECT_EQ(mismatches, 0u);
  MappedFile again = MappedFile::open(path, PagePolicy::HugePages);  // the second load finds whatever the first left
  EXPECT_EQ(again.data()[bytes - 1], byte_at(bytes - 1));
  EXPECT_EQ(again.data()[size_t(33) << 20], byte_at(size_t(33) << 20));
}

TEST(AdviseHugePages, RefusesEmptyRanges) {
  EXPECT_FALSE(advise_huge_pages(nullptr, 4096));
  int x = 0;
  EXPECT_FALSE(advise_huge_pages(&x, 0));
}

}  // namespace
}  // namespace hfstatic
