// Memory whose bytes touch an inaccessible page: a read or a write one byte past the end (or, with
// Guard::Before, one byte before the start) faults at once instead of reading a neighbour's bytes.
// The kernel tests place every operand in one to prove that a kernel touches only what it was given.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace hfstatic::test {

enum class Guard { After, Before };

class GuardedBuffer {
 public:
  GuardedBuffer(size_t bytes, Guard guard) : bytes_(bytes) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const size_t data_pages = (bytes + page - 1) / page;
    mapped_ = (data_pages + 1) * page;
    void* base = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::runtime_error("mmap of a guarded buffer failed");
    base_ = static_cast<uint8_t*>(base);
    uint8_t* guard_page = guard == Guard::After ? base_ + data_pages * page : base_;
    if (mprotect(guard_page, page, PROT_NONE) != 0) throw std::runtime_error("mprotect of a guard page failed");
    data_ = guard == Guard::After ? guard_page - bytes : base_ + page;
  }
  GuardedBuffer(const void* src, size_t bytes, Guard guard) : GuardedBuffer(bytes, guard) {
    if (bytes) std::memcpy(data_, src, bytes);
  }
  template <typename T>
  GuardedBuffer(const std::vector<T>& src, Guard guard) : GuardedBuffer(src.data(), src.size() * sizeof(T), guard) {}
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  ~GuardedBuffer() { munmap(base_, mapped_); }

  template <typename T = void>
  T* as() const {
    return reinterpret_cast<T*>(data_);
  }
  size_t size() const { return bytes_; }
  template <typename T>
  std::vector<T> copy() const {
    std::vector<T> out(bytes_ / sizeof(T));
    if (bytes_) std::memcpy(out.data(), data_, out.size() * sizeof(T));
    return out;
  }

 private:
  size_t bytes_ = 0, mapped_ = 0;
  uint8_t* base_ = nullptr;
  uint8_t* data_ = nullptr;
};

}  // namespace hfstatic::test
