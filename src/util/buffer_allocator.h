// Where long-lived buffers (state, masks, positions, executor arenas) get their memory.
#pragma once
#include <cstddef>
#include <memory>

namespace hfstatic {

class BufferAllocator {
 public:
  virtual ~BufferAllocator() = default;
  // Returns zero-filled memory aligned to `alignment` (a power of two), or throws Error.
  virtual void* allocate(size_t bytes, size_t alignment) = 0;
  virtual void deallocate(void* p, size_t bytes) = 0;
};

// Aligned, zero-filled memory, the process-wide default: the heap for small buffers, anonymous
// mappings from 1 MiB up (their pages take memory only once written).
class HeapAllocator : public BufferAllocator {
 public:
  void* allocate(size_t bytes, size_t alignment) override;
  void deallocate(void* p, size_t bytes) override;
  static HeapAllocator& instance();
};

// An owned buffer that returns its memory to the allocator it came from.
class Buffer {
 public:
  Buffer() = default;
  Buffer(BufferAllocator& allocator, size_t bytes, size_t alignment = 64);
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    Buffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t size() const { return size_; }

 private:
  void swap(Buffer& o) noexcept {
    std::swap(allocator_, o.allocator_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
  }
  BufferAllocator* allocator_ = nullptr;
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace hfstatic
