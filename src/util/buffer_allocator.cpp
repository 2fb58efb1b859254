#include "util/buffer_allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "util/error.h"

namespace hfstatic {

namespace {
// Buffers this large (an arena holding the prompt's logits, KV caches) are mapped straight from
// the kernel: their pages are zero without being written, so the parts a run never touches
// (the logits rows nobody asked for, the cache slots past the context reached) cost no memory.
constexpr size_t kMapThreshold = size_t(1) << 20;

size_t page_size() {
  static const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  return page;
}

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }
}  // namespace

void* HeapAllocator::allocate(size_t bytes, size_t alignment) {
  if (bytes >= kMapThreshold) {
    const size_t size = round_up(bytes, page_size());
    const size_t slack = alignment > page_size() ? alignment : 0;
    void* p = ::mmap(nullptr, size + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail("out of memory mapping ", bytes, " bytes");
    if (slack) {  // keep the aligned part, unmap the rest
      const uintptr_t start = reinterpret_cast<uintptr_t>(p), aligned = round_up(start, alignment);
      if (aligned > start) ::munmap(p, aligned - start);
      if (slack > aligned - start) ::munmap(reinterpret_cast<void*>(aligned + size), slack - (aligned - start));
      p = reinterpret_cast<void*>(aligned);
    }
    return p;
  }
  size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
  if (!p) fail("out of memory allocating ", bytes, " bytes");
  std::memset(p, 0, rounded == 0 ? alignment : rounded);
  return p;
}

void HeapAllocator::deallocate(void* p, size_t bytes) {
  if (bytes >= kMapThreshold)
    ::munmap(p, round_up(bytes, page_size()));
  else
    std::free(p);
}

HeapAllocator& HeapAllocator::instance() {
  static HeapAllocator heap;
  return heap;
}

Buffer::Buffer(BufferAllocator& allocator, size_t bytes, size_t alignment)
    : allocator_(&allocator), data_(allocator.allocate(bytes, alignment)), size_(bytes) {}

Buffer::~Buffer() {
  if (allocator_ && data_) allocator_->deallocate(data_, size_);
}

}  // namespace hfstatic
