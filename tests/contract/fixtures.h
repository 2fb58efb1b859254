// The hf_static v1 contract corpus: small programs exported from the tiny checkpoint presets,
// valid ones and ones broken on purpose (each with the violation a loader must report).
// Fixtures are described statically (so that parameterised tests can list them) and written
// on first use into a folder of the build tree that lives as long as the test process.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "export/graph_builder.h"
#include "format/program.h"
#include "io/io_manager.h"

namespace hfstatic::contract {

inline constexpr uint64_t kSeed = 3;

struct ValidFixture {
  std::string name;
  std::string preset;
  GraphOptions graph;
  std::vector<int64_t> prompt;  // fits max_context
  int steps = 6;                // greedy tokens wanted (capped by the context, see greedy_count)
  // Metadata edits that keep the program valid (e.g. the v1 feature keys at their allowed value).
  std::function<void(ProgramSpec&)> edit;
  int64_t version = 1;  // the contract version the program conforms to

  // Greedy tokens a generation can produce: one from the prompt's logits, then one per decode
  // call while the position is below max_context.
  int greedy_count() const;
  bool tail_routed() const;  // the prompt plan ends with decode steps
};

enum class LoadPath {
  Contract,  // IOManagerRegistry::load throws ContractError listing `expected`
  Registry,  // IOManagerRegistry::load throws an Error naming the supported contracts
};

struct InvalidFixture {
  std::string name;
  std::string preset = "tiny";
  GraphOptions graph;
  std::function<void(ProgramSpec&)> mutate;
  std::vector<std::string> expected;  // exact violations hf_static_v1_violations must contain
  LoadPath path = LoadPath::Contract;
  std::string registry_error;  // for LoadPath::Registry: a substring of the error
  // Every input and output still has the byte size the contract expects: only a dtype/shape
  // check can reject it.
  bool equal_bytes = false;
  // With equal_bytes: the graph is still consistent, so a loader checking byte sizes only loads
  // it without any error.
  bool loads_without_contract_check = false;
  int64_t version = 1;  // the contract the metadata names, which the program is checked against
};

const std::vector<ValidFixture>& valid_fixtures();
const std::vector<InvalidFixture>& invalid_fixtures();
// The version 2 corpus: programs with sliding-window layers (the *-sw and gemma3 presets), and
// programs that break version 2 (or name the wrong version for their layers).
const std::vector<ValidFixture>& valid_v2_fixtures();
const std::vector<InvalidFixture>& invalid_v2_fixtures();
// A fixture of either corpus by name.
const ValidFixture& valid_fixture(const std::string& name);
const InvalidFixture& invalid_fixture(const std::string& name);

// Writes the fixture (once per process) and returns its path.
std::string fixture_path(const ValidFixture& f);
std::string fixture_path(const InvalidFixture& f);

// The base options of the invalid corpus on the "tiny" preset: L = 2, H = 2, D = 16, V = 272,
// prefill_len 4, max_context 16, float32 cache, state repeated after logits.
GraphOptions base_invalid_options();

// Re-writes `source` with another spec: every weight tensor and embedded file is copied.
void write_with_spec(const Program& source, const ProgramSpec& spec, const std::string& path);

// The NumPy reference's greedy tokens for a prompt (cached on disk in the build tree).
std::vector<int64_t> reference_greedy(const std::string& preset, const std::vector<int64_t>& prompt, int steps,
                                      DType cache_dtype);

// Counts what the IOManager asks of the allocator it was given.
class CountingAllocator : public BufferAllocator {
 public:
  void* allocate(size_t bytes, size_t alignment) override {
    sizes.push_back(bytes);
    live += bytes;
    return HeapAllocator::instance().allocate(bytes, alignment);
  }
  void deallocate(void* p, size_t bytes) override {
    live -= bytes;
    ++freed;
    HeapAllocator::instance().deallocate(p, bytes);
  }
  uint64_t total() const {
    uint64_t t = 0;
    for (size_t s : sizes) t += s;
    return t;
  }
  std::vector<size_t> sizes;
  int64_t live = 0;
  size_t freed = 0;
};

// Greedy generation straight through an IOManager from start_pos 0: feeds the prompt, then
// decodes up to `steps` tokens while the context has room. Throws Error on a failed step.
std::vector<int64_t> greedy_generate(IOManager& io, const std::vector<int64_t>& prompt, int steps);

}  // namespace hfstatic::contract
