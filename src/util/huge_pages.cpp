#include "util/huge_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <charconv>
#include <string>

#include "util/proc_stats.h"

namespace hfstatic {

bool advise_huge_pages(const void* addr, size_t bytes) {
#ifdef MADV_HUGEPAGE
  if (!addr || bytes == 0) return false;
  // madvise wants a page-aligned start; the partial page before it is left alone.
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE)), a = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t aligned = (a + page - 1) / page * page;
  if (aligned - a >= bytes) return false;
  return ::madvise(reinterpret_cast<void*>(aligned), bytes - (aligned - a), MADV_HUGEPAGE) == 0;
#else
  (void)addr;
  (void)bytes;
  return false;
#endif
}

namespace {

// "7f00a0000000-7f00a0400000 r--p ..." -> start, end; false if the line is not a mapping header.
bool parse_range(std::string_view line, uintptr_t* start, uintptr_t* end) {
  const size_t dash = line.find('-'), space = line.find(' ');
  if (dash == std::string_view::npos || space == std::string_view::npos || dash > space) return false;
  auto hex = [](std::string_view s, uintptr_t* v) {
    auto r = std::from_chars(s.data(), s.data() + s.size(), *v, 16);
    return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
  };
  return hex(line.substr(0, dash), start) && hex(line.substr(dash + 1, space - dash - 1), end);
}

// "FilePmdMapped:    75776 kB" -> bytes, if the line is `key`.
bool parse_kb(std::string_view line, std::string_view key, uint64_t* bytes) {
  if (line.substr(0, key.size()) != key || line.size() <= key.size() || line[key.size()] != ':') return false;
  std::string_view rest = line.substr(key.size() + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  uint64_t kb = 0;
  auto r = std::from_chars(rest.data(), rest.data() + rest.size(), kb);
  if (r.ec != std::errc()) return false;
  *bytes = kb * 1024;
  return true;
}

}  // namespace

std::optional<PageUsage> parse_page_usage(std::string_view smaps, uintptr_t addr) {
  std::optional<PageUsage> usage;
  while (!smaps.empty()) {
    const size_t nl = smaps.find('\n');
    std::string_view line = smaps.substr(0, nl);
    smaps.remove_prefix(nl == std::string_view::npos ? smaps.size() : nl + 1);
    uintptr_t b = 0, e = 0;
    if (parse_range(line, &b, &e)) {
      if (usage) break;  // the next mapping: ours is complete
      if (b <= addr && addr < e) usage = PageUsage{e - b, 0, 0};
      continue;
    }
    if (!usage) continue;
    uint64_t v = 0;
    if (parse_kb(line, "Rss", &v))
      usage->resident = v;
    else if (parse_kb(line, "AnonHugePages", &v) || parse_kb(line, "FilePmdMapped", &v) ||
             parse_kb(line, "ShmemPmdMapped", &v))
      usage->huge += v;
  }
  return usage;
}

bool worth_rereading(const PageUsage& usage) { return usage.size >= kRereadMinBytes && usage.huge < usage.size / 2; }

std::optional<PageUsage> page_usage(const void* addr) {
  std::optional<std::string> smaps = read_proc_self("smaps");
  if (!smaps) return std::nullopt;
  return parse_page_usage(*smaps, reinterpret_cast<uintptr_t>(addr));
}

}  // namespace hfstatic
