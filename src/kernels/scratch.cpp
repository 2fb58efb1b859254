#include "kernels/scratch.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace hfstatic::kernels {

namespace {
std::atomic<size_t> all_shortfalls{0};
thread_local Workspace* installed = nullptr;
thread_local int installed_slot = 0;

// The buffers of kernels called outside an installed workspace.
Workspace& own_workspace() {
  thread_local Workspace own;
  return own;
}

float* own_scratch(ScratchBuffer b, size_t floats) {
  Workspace& own = own_workspace();
  if (own.threads() == 0) own.reserve({}, 1);
  return own.get(0, b, floats);
}

constexpr size_t kAlignFloats = 64 / sizeof(float);
size_t rounded(size_t floats) { return (floats + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }
}  // namespace

const char* scratch_buffer_name(ScratchBuffer b) {
  switch (b) {
    case ScratchBuffer::QuantizedRows: return "quantized-rows";
    case ScratchBuffer::FoldedRows: return "folded-rows";
    case ScratchBuffer::PackedPanels: return "packed-panels";
    case ScratchBuffer::NormWeights: return "norm-weights";
    case ScratchBuffer::AttentionRows: return "attention-rows";
    case ScratchBuffer::AttentionParts: return "attention-parts";
    case ScratchBuffer::ExpertRouting: return "expert-routing";
    case ScratchBuffer::ExpertRows: return "expert-rows";
    case ScratchBuffer::WeightTile: return "weight-tile";
    case ScratchBuffer::PartialSums: return "partial-sums";
    case ScratchBuffer::KeyTile: return "key-tile";
    case ScratchBuffer::KeyRows: return "key-rows";
    case ScratchBuffer::ValueRows: return "value-rows";
    case ScratchBuffer::Scores: return "scores";
    case ScratchBuffer::Accumulators: return "accumulators";
    case ScratchBuffer::SlotsUsed: return "slots-used";
    case ScratchBuffer::kCount: break;
  }
  return "?";
}

ScratchNeed& ScratchNeed::merge(const ScratchNeed& other) {
  for (size_t i = 0; i < kScratchBuffers; ++i) floats[i] = std::max(floats[i], other.floats[i]);
  return *this;
}

size_t ScratchNeed::bytes(int threads) const {
  size_t total = 0;
  for (size_t i = 0; i < kScratchBuffers; ++i) {
    if (!floats[i]) continue;
    const size_t copies = calling_thread_only(ScratchBuffer(i)) ? 1 : size_t(std::max(threads, 1));
    total += copies * rounded(floats[i]) * sizeof(float);
  }
  return total;
}

std::string ScratchNeed::describe() const {
  std::string out;
  for (size_t i = 0; i < kScratchBuffers; ++i) {
    if (!floats[i]) continue;
    if (!out.empty()) out += ", ";
    out += scratch_buffer_name(ScratchBuffer(i));
    out += ' ';
    out += std::to_string(floats[i] * sizeof(float));
  }
  return out.empty() ? "none" : out;
}

void Workspace::Buffer::grow(size_t floats) {
  const size_t n = rounded(floats);
  float* p = static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)));
  if (!p) throw std::bad_alloc();
  data.reset(p);
  capacity = n;
}

Workspace::Workspace() = default;
Workspace::~Workspace() = default;

void Workspace::reserve(const ScratchNeed& need, int threads) {
  while (int(slots_.size()) < std::max(threads, 1)) slots_.push_back(std::make_unique<Slot>());
  for (size_t s = 0; s < slots_.size(); ++s)
    for (size_t i = 0; i < kScratchBuffers; ++i) {
      const bool wanted = s == 0 || !calling_thread_only(ScratchBuffer(i));
      Buffer& b = (*slots_[s])[i];
      if (wanted && b.capacity < need.floats[i]) b.grow(need.floats[i]);
    }
}

float* Workspace::get(int slot, ScratchBuffer b, size_t floats) {
  if (slot < 0 || size_t(slot) >= slots_.size()) {
    shortfalls_.fetch_add(1, std::memory_order_relaxed);
    all_shortfalls.fetch_add(1, std::memory_order_relaxed);
    return own_scratch(b, floats);
  }
  Buffer& buffer = (*slots_[size_t(slot)])[size_t(b)];
  if (buffer.capacity < floats) {
    if (this != &own_workspace()) {
      shortfalls_.fetch_add(1, std::memory_order_relaxed);
      all_shortfalls.fetch_add(1, std::memory_order_relaxed);
    }
    buffer.grow(floats);
  }
  return buffer.data.get();
}

size_t Workspace::total_shortfalls() { return all_shortfalls.load(std::memory_order_relaxed); }

size_t Workspace::reserved_bytes() const {
  size_t total = 0;
  for (const auto& slot : slots_)
    for (const Buffer& b : *slot) total += b.capacity * sizeof(float);
  return total;
}

ScopedWorkspace::ScopedWorkspace(Workspace* workspace) : previous_(installed), previous_slot_(installed_slot) {
  installed = workspace;
  installed_slot = 0;
}

ScopedWorkspace::~ScopedWorkspace() {
  installed = previous_;
  installed_slot = previous_slot_;
}

namespace detail {

Workspace* installed_workspace() { return installed; }

WorkerScratch::WorkerScratch(Workspace* workspace, int slot) : previous_(installed), previous_slot_(installed_slot) {
  installed = workspace;
  installed_slot = slot;
}

WorkerScratch::~WorkerScratch() {
  installed = previous_;
  installed_slot = previous_slot_;
}

float* scratch(ScratchBuffer b, size_t floats) {
  return installed ? installed->get(installed_slot, b, floats) : own_scratch(b, floats);
}

}  // namespace detail

}  // namespace hfstatic::kernels
