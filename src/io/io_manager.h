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

class Execution;
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

  // Validates the program against the contract, loads its methods with `runtime` and
  // allocates every buffer from `allocator`; throws Error.
  virtual void load(std::shared_ptr<const Program> program, BufferAllocator& allocator,
                    const RuntimeOptions& runtime = {}) = 0;
  virtual const ModelInfo& model() const = 0;
  // Forgets everything fed so far: the next prompt starts at position 0.
  virtual void reset() = 0;
  // The calls that feed n tokens at start_pos. Throws Error (nothing has run) if they cannot fit.
  virtual std::vector<Step> plan(int64_t start_pos, size_t n_tokens) const = 0;
  // Feeds one step (one of plan()'s, or a decode step of one token): writes its inputs, binds
  // the method and runs it; logits() then reads the step's last real row. Throws Error for a
  // step that cannot be fed (nothing runs); returns the method's error if the run fails.
  Status step(StepKind kind, int64_t start_pos, std::span<const int64_t> tokens, ThreadPool* pool = nullptr);
  // Logits of the last real token of the last run step: vocab_size floats.
  virtual std::span<const float> logits() const = 0;

  // Plans, then runs every step; on error the state may hold part of the prompt, but nothing
  // runs if planning fails.
  Status feed(int64_t start_pos, std::span<const int64_t> tokens, ThreadPool* pool = nullptr);

  // Checking drafted tokens (speculative decoding). verify_capacity(start_pos): the most tokens
  // verify() takes there, 0 where it cannot run (then feed them one decode step at a time).
  // verify() feeds the tokens at start_pos in one step whose every row is computed as the decode
  // step of its token would be, bit for bit, and keeps every row's logits (row_logits(i)).
  // Tokens after a rejected draft were fed too: the next feed at their position overwrites them
  // (counters are written from start_pos). Throws Error as step() does.
  virtual int64_t verify_capacity(int64_t start_pos) const { return 0; }
  virtual Status verify(int64_t start_pos, std::span<const int64_t> tokens, ThreadPool* pool = nullptr);

  // Scoring every token (perplexity, parity checks): after set_all_logits(true) each step keeps
  // the logits of all its real rows, not only the last one's. row_logits(i): the logits of real
  // row i of the last step (vocab_size floats), for each row of a verify() step or of a step
  // that kept them all, and for the last row of any step; any other row is an Error. The
  // defaults refuse: a contract that cannot keep them says so.
  virtual void set_all_logits(bool all);
  virtual std::span<const float> row_logits(int64_t row) const;

  // One decode step of each manager together: ios[i] decodes tokens[i] at positions[i], its
  // inputs prepared and its logits and state left exactly as its own step(StepKind::Decode, ...)
  // leaves them, bit for bit, while the linear products of all read the weights once
  // (Execution::run_batch). The managers must have loaded the same program with the same
  // options. Throws Error (nothing has run) for managers that cannot run together, sizes that
  // differ, a position that does not fit or a token outside the vocabulary; returns the run's
  // error if it fails.
  static Status decode_batch(std::span<IOManager* const> ios, std::span<const int64_t> positions,
                             std::span<const int64_t> tokens, ThreadPool* pool = nullptr);

 protected:
  // The parts of step(), in order. prepare() writes tokens, positions, mask and counters and
  // throws Error on a bad step; bind() binds the prepared method's inputs and outputs.
  virtual void prepare(StepKind kind, int64_t start_pos, std::span<const int64_t> tokens) = 0;
  virtual void bind() = 0;
  virtual Status run(ThreadPool* pool) = 0;
  // decode_batch's parts: the Execution a prepared decode step runs (null: this manager cannot
  // decode in a batch), and what run() does once that Execution has run with status s.
  virtual Execution* decode_execution() { return nullptr; }
  virtual void decode_ran(const Status& s) {}
};

using IOManagerFactory = std::function<std::unique_ptr<IOManager>()>;

// An I/O contract the registry knows: how to make its IOManager, and how to check a program
// against it without loading or allocating anything.
struct IOContract {
  std::string name;         // the metadata's io_contract
  int64_t version = 0;      // the metadata's version
  IOManagerFactory create;  // a new IOManager, not loaded yet
  // Every violation of the contract by the program (empty: the program conforms).
  std::function<std::vector<std::string>(const Program&)> violations;
  // A conforming program in a few words ("2 layers, max_context 16, ...").
  std::function<std::string(const Program&)> summary;
};

class IOManagerRegistry {
 public:
  IOManagerRegistry() = default;  // empty; instance() holds the built-in contracts
  static IOManagerRegistry& instance();
  // Registers a contract; throws Error when its (name, version) pair is already registered.
  void add(IOContract contract);
  // Creates and loads the IOManager the program's metadata asks for; an unknown pair is an
  // Error listing the supported ones.
  std::unique_ptr<IOManager> load(std::shared_ptr<const Program> program,
                                  BufferAllocator& allocator = HeapAllocator::instance(),
                                  const RuntimeOptions& runtime = {}) const;
  // Every violation of the contract the program's metadata names (an unknown pair is one,
  // listing the supported ones); empty when it conforms. Loads and allocates nothing.
  std::vector<std::string> validate(const Program& program) const;
  // "hf_static v1 program (2 layers, ...)" for a program validate() accepts.
  std::string describe(const Program& program) const;
  std::vector<std::string> supported() const;  // "hf_static v1", ...

 private:
  // The contract the program's metadata names; nullptr with *problem set when there is none.
  const IOContract* find(const Program& program, std::string* problem) const;
  std::vector<IOContract> contracts_;
};

// Registers the contracts this library implements (builtin_contracts.cpp).
void register_builtin_contracts(IOManagerRegistry& registry);

}  // namespace hfstatic
