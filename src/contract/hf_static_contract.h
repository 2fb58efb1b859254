// The hf_static contract, versions 1 and 2 (normative text: docs/hf_static-v1.md and
// docs/hf_static-v2.md), spelled out once: the metadata keys, where each input and output of a
// method sits, and the check that lists every violation. Version 2 is version 1 plus
// sliding-window ("local") layers over full-length caches, read through a second mask input.
// The exporter builds programs from it; the IOManager checks and drives them with it.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "format/program.h"
#include "util/dtype.h"
#include "util/error.h"

namespace hfstatic {

// A program that breaks the contract; what() lists every violation, one per line.
class ContractError : public Error {
 public:
  ContractError(const std::string& origin, std::vector<std::string> violations, int64_t version = 1);
  const std::vector<std::string>& violations() const { return violations_; }

 private:
  std::vector<std::string> violations_;
};

// Every violation of hf_static v1 by the program's metadata and method signatures (empty
// when it conforms). Graph-level problems are reported by Method::load, not here.
std::vector<std::string> hf_static_v1_violations(const Program& program);
// The same for hf_static v2 (a program whose version is not 2 violates it).
std::vector<std::string> hf_static_v2_violations(const Program& program);
// The same for the given version (1 or 2).
std::vector<std::string> hf_static_violations(const Program& program, int64_t version);

namespace hf_static {

inline constexpr const char* kContract = "hf_static";
inline constexpr int64_t kVersion = 1;
inline constexpr int64_t kVersion2 = 2;  // version 1 plus sliding-window layers

// Metadata keys.
namespace keys {
// The pair that selects the I/O contract (any contract's programs carry these two).
inline constexpr const char* io_contract = "io_contract";
inline constexpr const char* version = "version";
// What the runtime reads.
inline constexpr const char* n_layers = "n_layers";
inline constexpr const char* n_kv_heads = "n_kv_heads";
inline constexpr const char* head_dim = "head_dim";
inline constexpr const char* max_context = "max_context";
inline constexpr const char* prefill_len = "prefill_len";
inline constexpr const char* vocab_size = "vocab_size";
inline constexpr const char* cache_dtype = "cache_dtype";
inline constexpr const char* bos_id = "bos_id";
inline constexpr const char* eos_ids = "eos_ids";
inline constexpr const char* prefill_method = "prefill_method";
inline constexpr const char* decode_method = "decode_method";
// Version 2: per layer "global" or "local" (layer_types), and the window of local layers.
inline constexpr const char* layer_types = "layer_types";
inline constexpr const char* sliding_window = "sliding_window";
// Features version 1 excludes (a program may carry them only with their one allowed value).
inline constexpr const char* attention_layout = "attention_layout";
inline constexpr const char* cache_mode = "cache_mode";
inline constexpr const char* batch_size = "batch_size";
// Informational: written by the exporter, never read by the runtime.
inline constexpr const char* model_type = "model_type";
inline constexpr const char* n_heads = "n_heads";
inline constexpr const char* hidden_size = "hidden_size";
inline constexpr const char* weights_dtype = "weights_dtype";
inline constexpr const char* mutation_order = "mutation_order";
inline constexpr const char* repeat_state = "repeat_state";
}  // namespace keys

// The values of layer_types: a global layer sees every earlier position, a local one the last
// sliding_window positions up to and including its own.
enum class LayerKind { Global, Local };
const char* layer_kind_name(LayerKind kind);  // "global", "local"

// What the runtime reads from the metadata.
struct Metadata {
  int64_t version = kVersion;
  int64_t n_layers = 0, n_kv_heads = 0, head_dim = 0;
  int64_t max_context = 0, prefill_len = 0, vocab_size = 0;
  DType cache_dtype = DType::F32;
  int64_t bos_id = -1;  // -1: none
  std::vector<int64_t> eos_ids;
  std::string prefill_method, decode_method;
  std::vector<LayerKind> layer_kinds;  // version 2: one per layer; empty in version 1
  int64_t sliding_window = 0;          // version 2: the window of local layers, 1 .. max_context - 1

  bool has_local_mask() const { return version >= kVersion2; }
};

// Reads the metadata as the given version asks, appending a violation for each key missing,
// mistyped, out of range or excluded; nullopt when there was any. io_contract and version are
// not checked here.
std::optional<Metadata> read_metadata(const Program& program, std::vector<std::string>& violations,
                                      int64_t version = kVersion);
// The metadata object of a conforming program: io_contract, version and every key above.
nlohmann::json metadata_json(const Metadata& metadata);
// "2 layers, max_context 16, prefill_len 4, float32 cache": a conforming program in a line.
std::string summary(const Metadata& metadata);

// ---- method layout ------------------------------------------------------------------------
// Both methods take tokens, positions and mask (version 2: then the local mask), then the
// state: per layer a key cache, a value cache and a counter (k0, v0, c0, k1, ...). The state set
// is indexed by "slot" below.

inline constexpr size_t kTokensInput = 0;
inline constexpr size_t kPositionsInput = 1;
inline constexpr size_t kMaskInput = 2;
inline constexpr size_t kLocalMaskInput = 3;  // version 2 only

enum class StateRole { KeyCache = 0, ValueCache = 1, Counter = 2 };
inline constexpr size_t kStatePerLayer = 3;

inline size_t state_count(int64_t n_layers) { return kStatePerLayer * size_t(n_layers); }
inline size_t state_slot(int64_t layer, StateRole role) { return kStatePerLayer * size_t(layer) + size_t(role); }
inline size_t first_state_input(const Metadata& m) { return m.has_local_mask() ? 4 : 3; }
inline size_t state_input(const Metadata& m, size_t slot) { return first_state_input(m) + slot; }

// Outputs: the mutation prefix (slots 0 .. 3L-1 reported in any order), the logits, then
// optionally the state repeated in slot order.
inline size_t logits_output(int64_t n_layers) { return state_count(n_layers); }
inline size_t repeated_state_output(int64_t n_layers, size_t slot) { return logits_output(n_layers) + 1 + slot; }
inline size_t output_count(int64_t n_layers, bool repeated_state) {
  return repeated_state ? repeated_state_output(n_layers, state_count(n_layers)) : logits_output(n_layers) + 1;
}

// Rows of a method: prefill_len for prefill, 1 for decode.
inline int64_t method_rows(const Metadata& m, bool prefill) { return prefill ? m.prefill_len : 1; }

struct ValueLayout {
  std::string name;  // the name the exporter gives it ("tokens", "k_cache_0", ...); free in a program
  std::string role;  // how violations name it ("tokens", "k_cache of layer 0", ...)
  DType dtype;
  Shape shape;
};
// The inputs of a method of `rows` rows, in order.
std::vector<ValueLayout> method_inputs(const Metadata& metadata, int64_t rows);
// Logits: float32 [1, rows, vocab_size].
Shape logits_shape(const Metadata& metadata, int64_t rows);

}  // namespace hf_static
}  // namespace hfstatic
