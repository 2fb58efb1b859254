// Transparent huge pages for the large buffers decode streams (the weights' mapping, the
// bandwidth probe), and how much of a mapping the kernel actually backs with them.
//
// Reading a gigabyte of weights a token over 4 KiB pages costs a TLB miss every 4 KiB; in a
// virtual machine each miss is a two-level page walk, and its cost moves with the host's load.
// With 2 MiB pages the same stream runs faster and steadier (docs/performance.md).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hfstatic {

// Asks the kernel to back [addr, addr + bytes) with huge pages where it can (Linux
// MADV_HUGEPAGE; a no-op elsewhere or when transparent huge pages are off). Best effort:
// returns whether the kernel accepted the advice.
bool advise_huge_pages(const void* addr, size_t bytes);

struct PageUsage {
  uint64_t size = 0;      // bytes of the mapping
  uint64_t resident = 0;  // of those, in memory
  uint64_t huge = 0;      // of those, mapped by huge pages (anonymous, file or shared memory)
};

// Usage of the mapping (the kernel's VMA) that contains `addr`, from /proc/self/smaps; nullopt
// when no mapping contains it or there is no smaps to read.
std::optional<PageUsage> page_usage(const void* addr);

// The same from smaps text (exposed for tests).
std::optional<PageUsage> parse_page_usage(std::string_view smaps, uintptr_t addr);

// A file's pages stay in the page cache in the folios they were first read or written in
// (a copy, or reads through a mapping without the advice, leave 4 KiB ones), and a mapping of
// cached pages maps them as they are. Whether a read-only file mapping whose sampled pages
// (one per 2 MiB, all cached) show `usage` is worth dropping from the cache so that the next
// reads bring it back in huge folios: large enough to matter, little of it in huge pages.
constexpr uint64_t kRereadMinBytes = uint64_t(64) << 20;
bool worth_rereading(const PageUsage& usage);

}  // namespace hfstatic
