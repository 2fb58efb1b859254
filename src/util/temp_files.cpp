#include "util/temp_files.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace hfstatic {

namespace {

constexpr int kSlots = 16;
constexpr size_t kMaxPath = 4096;

// A signal handler may only read plain memory: fixed slots, published with an atomic flag.
struct Slot {
  std::atomic<bool> used{false};
  char path[kMaxPath];
};
Slot slots[kSlots];
std::mutex slots_mutex;  // among registering threads; the handler does not take it

void remove_temp_files_and_reraise(int sig) {
  for (Slot& s : slots)
    if (s.used.load(std::memory_order_acquire)) ::unlink(s.path);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void install_handlers() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;  // someone else's
    struct sigaction sa {};
    sa.sa_handler = remove_temp_files_and_reraise;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace

int register_temp_file(const std::string& path) {
  if (path.size() >= kMaxPath) return -1;
  static std::once_flag installed;
  std::call_once(installed, install_handlers);
  std::lock_guard<std::mutex> lock(slots_mutex);
  for (int i = 0; i < kSlots; ++i) {
    if (slots[i].used.load(std::memory_order_relaxed)) continue;
    std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
    slots[i].used.store(true, std::memory_order_release);
    return i;
  }
  return -1;
}

void unregister_temp_file(int handle) {
  if (handle < 0 || handle >= kSlots) return;
  std::lock_guard<std::mutex> lock(slots_mutex);
  slots[handle].used.store(false, std::memory_order_release);
}

}  // namespace hfstatic
