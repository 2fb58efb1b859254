// The interface a runner drives, independent of the model and of the program's I/O contract.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "executor/runtime_options.h"
#include "format/program.h"
#include "util/buffer_allocator.h"
#include "util/error.h"

namespace hfstatic {

class ThreadPool;

// What a runner needs to know about the model behind an IOManager.
struct ModelInfo {
  int64_t n_layers = 0, n_kv_heads = 0, head_dim = 0;
  int64_t max_context = 0, prefill_len = 0, vocab_size = 0;
  DType cache_dtype = DType::F32;
  int64_t bos_id = -1;  // -1: none
  std::vector<int64_t> eos_ids;
  std::string prefill_method, decode_method;
};

enum class StepKind { Prefill, Decode };
const char* step_kind_name(StepKind k);

// One method call of a prompt plan: tokens [begin, begin + count) of the prompt at start_pos.
struct Step {
  StepKind kind;
  int64_t start_pos;
  size_t begin, count;
};

class IOManager {
 public:
  virtual ~IOManager() = default;

  // Validates the program against the contract, loads its methods with `runtime` and allocates
  // every buffer; throws Error.
  virtual void load(std::shared_ptr<const Program> program, BufferAllocator& allocator, const RuntimeOptions& runtime = {}) = 0;
  virtual const ModelInfo& model() const = 0;
  // Forgets everything fed so far: the next prompt starts at position 0.
  virtual void reset() = 0;
  // The calls that feed n tokens at start_pos. Throws Error (nothing has run) if they cannot fit.
  virtual std::vector<Step> plan(int64_t start_pos, size_t n_tokens) const = 0;
  // Writes tokens, positions, mask and counters for one step. Throws Error on a bad step.
  virtual void prepare(StepKind kind, int64_t start_pos, std::span<const int64_t> tokens) = 0;
  // Binds the prepared method's inputs and outputs.
  virtual void bind() = 0;
  virtual Status run(ThreadPool* pool) = 0;
  // Logits of the last real token of the last run step: vocab_size floats.
  virtual std::span<const float> logits() const = 0;

  // Plans, then prepares, binds and runs every step; on error the state may hold part of the
  // prompt, but nothing runs if planning fails.
  Status feed(int64_t start_pos, std::span<const int64_t> tokens, ThreadPool* pool = nullptr);
};

using IOManagerFactory = std::function<std::unique_ptr<IOManager>()>;

class IOManagerRegistry {
 public:
  static IOManagerRegistry& instance();
  // Registers the IOManager for a (contract, version) pair; a later registration replaces it.
  void add(const std::string& contract, int64_t version, IOManagerFactory factory);
  // Creates and loads the IOManager the program's metadata asks for; an unknown pair is an
  // Error listing the supported ones.
  std::unique_ptr<IOManager> load(std::shared_ptr<const Program> program, BufferAllocator& allocator = HeapAllocator::instance(),
                                  const RuntimeOptions& runtime = {}) const;
  std::vector<std::string> supported() const;  // "hf_static v1", ...

 private:
  IOManagerRegistry();
  struct Entry {
    std::string contract;
    int64_t version;
    IOManagerFactory factory;
  };
  std::vector<Entry> entries_;
};

}  // namespace hfstatic
