// Scratch memory of the kernels, by name. Each kernel variant declares what it takes for the
// arguments it will be called with (KernelPlan, from the table's plan_* functions); the
// executor reserves the largest need of a method's steps for every thread of its pool in a
// Workspace, and installs it for the run. A kernel asks for a buffer by name (detail::scratch);
// outside any installed Workspace (a kernel called directly, by a test or a microbenchmark) the
// calling thread's own Workspace serves, growing as asked.
#pragma once
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hfstatic::kernels {

// The buffers, each for one purpose. The first group is asked for only by the thread that calls
// the kernel, before or after its parallel region; the second by every thread inside it.
enum class ScratchBuffer : uint8_t {
  // calling thread
  QuantizedRows,   // matrix-vector: the rows of x quantized to int8, per group size
  FoldedRows,      // matrix-vector: the folded op's result for the few rows
  PackedPanels,    // blocked multiply: x packed into panels of rows
  NormWeights,     // rms_norm (and a folded one): its weights as float32
  AttentionRows,   // decode attention: each row's slices and tasks
  AttentionParts,  // decode attention: each slice's maximum, sum and outputs
  ExpertRouting,   // mixture of experts: router probabilities and each row's chosen experts
  ExpertRows,      // mixture of experts: an expert's input rows and their gate, up and down outputs
  // every thread
  WeightTile,    // blocked multiply: weight rows converted to float32
  PartialSums,   // blocked multiply over chunks of k: sums between chunks
  KeyTile,       // prefill attention: keys as [head_dim][slot] float32
  KeyRows,       // prefill attention: 8 key rows being transposed, then the seen flags
  ValueRows,     // prefill attention: values as float32 rows
  Scores,        // attention: scores of a tile of queries
  Accumulators,  // attention: outputs being summed
  SlotsUsed,     // decode attention: slots some query of a tile weighs
  kCount
};
constexpr size_t kScratchBuffers = size_t(ScratchBuffer::kCount);
const char* scratch_buffer_name(ScratchBuffer b);
// Asked for by the calling thread only: one copy, not one per thread.
constexpr bool calling_thread_only(ScratchBuffer b) { return b < ScratchBuffer::WeightTile; }

// Floats of each buffer a call needs.
struct ScratchNeed {
  std::array<size_t, kScratchBuffers> floats{};

  size_t& operator[](ScratchBuffer b) { return floats[size_t(b)]; }
  size_t operator[](ScratchBuffer b) const { return floats[size_t(b)]; }
  // Each buffer the larger of the two.
  ScratchNeed& merge(const ScratchNeed& other);
  // Bytes for `threads` threads: the calling thread's buffers once, the others once a thread.
  size_t bytes(int threads) const;
  // "name floats, ..." of the buffers it takes, or "none".
  std::string describe() const;
};

// What a kernel call runs: its variant's name ("gemm f16", "int4 dot vnni", ...) and scratch.
struct KernelPlan {
  std::string variant;
  ScratchNeed scratch;
};

// Every thread's buffers. Not thread-safe as a whole: reserve() on one thread, then each thread
// of a run touches only its own slot.
class Workspace {
 public:
  Workspace();
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // Buffers for `threads` threads (slot 0 the calling thread) of at least `need`.
  void reserve(const ScratchNeed& need, int threads);
  int threads() const { return int(slots_.size()); }
  // Buffer b of thread `slot`, at least `floats` long, 64-byte aligned. A request beyond the
  // reservation is served by growing (a slot beyond the threads reserved: by the thread's own
  // workspace), and counted.
  float* get(int slot, ScratchBuffer b, size_t floats);
  // Requests that the reservation did not cover: a plan that declared too little.
  size_t shortfalls() const { return shortfalls_.load(std::memory_order_relaxed); }
  // Those of every workspace of the process so far.
  static size_t total_shortfalls();
  size_t reserved_bytes() const;

 private:
  struct Buffer {
    std::unique_ptr<float[], void (*)(float*)> data{nullptr, [](float* p) { std::free(p); }};
    size_t capacity = 0;
    void grow(size_t floats);
  };
  using Slot = std::array<Buffer, kScratchBuffers>;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::atomic<size_t> shortfalls_{0};
};

// Installs `workspace` for the kernels run on this thread (and the pool's threads in the
// parallel regions it issues) while the guard lives.
class ScopedWorkspace {
 public:
  explicit ScopedWorkspace(Workspace* workspace);
  ~ScopedWorkspace();
  ScopedWorkspace(const ScopedWorkspace&) = delete;
  ScopedWorkspace& operator=(const ScopedWorkspace&) = delete;

 private:
  Workspace* previous_;
  int previous_slot_;
};

namespace detail {
// The workspace installed on this thread (null: none) and this thread's slot in it.
Workspace* installed_workspace();
// A pool thread runs a job of `workspace` as thread `slot` while this guard lives.
class WorkerScratch {
 public:
  WorkerScratch(Workspace* workspace, int slot);
  ~WorkerScratch();

 private:
  Workspace* previous_;
  int previous_slot_;
};
// Buffer b of the calling thread, at least `floats` long.
float* scratch(ScratchBuffer b, size_t floats);
}  // namespace detail

}  // namespace hfstatic::kernels
