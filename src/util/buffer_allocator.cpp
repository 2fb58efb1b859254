#include "util/buffer_allocator.h"

#include <cstdlib>
#include <cstring>

#include "util/error.h"

namespace hfstatic {

void* HeapAllocator::allocate(size_t bytes, size_t alignment) {
  size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
  if (!p) fail("out of memory allocating ", bytes, " bytes");
  std::memset(p, 0, rounded == 0 ? alignment : rounded);
  return p;
}

void HeapAllocator::deallocate(void* p, size_t) { std::free(p); }

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
