#include "fixtures.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include <unistd.h>

#include "test_support.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace hfstatic::contract {

using nlohmann::json;

namespace {

// ---- spec editing helpers --------------------------------------------------------------------

MethodSpec& method(ProgramSpec& s, const std::string& name) {
  for (auto& m : s.methods)
    if (m.name == name) return m;
  fail("fixture: no method '", name, "'");
}

// An input or a declared value of a method, by name.
ValueSpec& value(ProgramSpec& s, const std::string& m, const std::string& name) {
  MethodSpec& ms = method(s, m);
  for (auto& v : ms.inputs)
    if (v.name == name) return v;
  for (auto& v : ms.values)
    if (v.name == name) return v;
  fail("fixture: method '", m, "' has no value '", name, "'");
}

using Mutation = std::function<void(ProgramSpec&)>;

Mutation set_meta(const std::string& key, json v) {
  return [key, v](ProgramSpec& s) { s.metadata[key] = v; };
}
Mutation erase_meta(const std::string& key) {
  return [key](ProgramSpec& s) { s.metadata.erase(key); };
}
Mutation retype(const std::string& m, const std::string& name, DType dtype, Shape shape) {
  return [=](ProgramSpec& s) {
    ValueSpec& v = value(s, m, name);
    v.dtype = dtype;
    v.shape = shape;
  };
}
Mutation both(Mutation a, Mutation b) {
  return [a, b](ProgramSpec& s) {
    a(s);
    b(s);
  };
}

GraphOptions options(int64_t prefill_len, int64_t max_context, DType cache, bool repeat,
                     const std::string& order = "input") {
  GraphOptions g;
  g.prefill_len = prefill_len;
  g.max_context = max_context;
  g.cache_dtype = cache;
  g.repeat_state = repeat;
  g.mutation_order = order;
  return g;
}

const std::vector<int64_t> kPrompt5 = {256, 72, 101, 108, 108};
const std::vector<int64_t> kPrompt11 = {256, 72, 101, 108, 108, 111, 44, 32, 119, 111, 114};
const std::vector<int64_t> kPrompt14 = {256, 84, 104, 101, 32, 113, 117, 105, 99, 107, 32, 98, 114, 111};
const std::vector<int64_t> kPrompt17 = {256, 79, 110, 99, 101, 32, 117, 112, 111, 110, 32, 97, 32, 116, 105, 109, 101};

std::vector<ValidFixture> make_valid() {
  std::vector<ValidFixture> v;
  auto add = [&](std::string name, std::string preset, GraphOptions g, std::vector<int64_t> prompt, int steps = 6,
                 std::function<void(ProgramSpec&)> edit = {}) {
    v.push_back({std::move(name), std::move(preset), g, std::move(prompt), steps, std::move(edit)});
  };
  // Every mutation order, with and without the repeated state, both cache dtypes.
  for (const std::string& order : mutation_orders()) {
    std::string o = order == "by-kind" ? "by_kind" : order;
    add("order_" + o + "_f32", "tiny", options(4, 32, DType::F32, false, order), kPrompt11);
    add("order_" + o + "_f16_repeat", "tiny", options(4, 32, DType::F16, true, order), kPrompt11);
  }
  add("f32_repeat", "tiny", options(4, 32, DType::F32, true), kPrompt11);
  add("f16", "tiny", options(4, 32, DType::F16, false), kPrompt11);
  // prefill_len == max_context: one padded prefill call takes the whole context.
  add("prefill_eq_context", "tiny", options(8, 8, DType::F32, true), kPrompt5, 8);
  // max_context 12, prefill_len 8, 11 prompt tokens: 0..7 by prefill, 8 + 8 > 12 so 8, 9, 10 by decode.
  add("tail_decode", "tiny", options(8, 12, DType::F32, false), kPrompt11, 6);
  add("tail_decode_f16_repeat", "tiny", options(8, 12, DType::F16, true), kPrompt11, 6);
  // Two full chunks, then 10 + 5 > 13: the last token by decode.
  add("two_chunks_then_decode", "tiny", options(5, 13, DType::F32, true, "reverse"), kPrompt11, 6);
  add("prefill_len_1", "tiny", options(1, 16, DType::F32, true), kPrompt5, 6);
  // The smallest context.
  add("min_context_prefill_1", "tiny", options(1, 2, DType::F32, false), {256}, 4);
  add("min_context_prefill_2", "tiny", options(2, 2, DType::F16, true), {256}, 4);
  // The other families.
  add("qwen2_f32_repeat", "tiny-qwen2", options(4, 32, DType::F32, true), kPrompt11);
  add("qwen3_f16_repeat_by_kind", "tiny-qwen3", options(8, 24, DType::F16, true, "by-kind"), kPrompt17);
  add("llama3_f32_rotate", "tiny-llama3", options(4, 16, DType::F32, false, "rotate"), kPrompt11);
  // 14 tokens, prefill_len 6, max_context 16: 0..5, 6..11 by prefill, 12 + 6 > 16 so 12, 13 by decode.
  add("mistral_f16_reverse_tail", "tiny-mistral", options(6, 16, DType::F16, true, "reverse"), kPrompt14);
  // The keys of excluded features, present with the one value v1 allows.
  add("v1_feature_keys_at_allowed_values", "tiny", options(4, 32, DType::F32, true), kPrompt11, 6, [](ProgramSpec& s) {
    s.metadata["attention_layout"] = "grouped";
    s.metadata["cache_mode"] = "full";
    s.metadata["batch_size"] = 1;
  });
  return v;
}

// The invalid corpus under construction: each fixture a mutation of the base program and what
// it must be refused for.
struct InvalidCorpus {
  std::vector<InvalidFixture> v;
  const GraphOptions base = base_invalid_options();

  InvalidFixture* add(std::string name, Mutation m, std::vector<std::string> expected, bool equal_bytes = false) {
    InvalidFixture f;
    f.name = std::move(name);
    f.graph = base;
    f.mutate = std::move(m);
    f.expected = std::move(expected);
    f.equal_bytes = equal_bytes;
    v.push_back(std::move(f));
    return &v.back();
  }
  void registry(std::string name, Mutation m, std::string violation, std::string error) {
    InvalidFixture* f = add(std::move(name), std::move(m), {std::move(violation)});
    f->path = LoadPath::Registry;
    f->registry_error = std::move(error);
  }
};

// Metadata: missing, mistyped, out of range, or in range and disagreeing with the signatures.
void add_metadata_fixtures(InvalidCorpus& c) {
  const std::string supported = "(supported: hf_static v1, hf_static v2)";

  // Missing keys.
  c.registry("missing_io_contract", erase_meta("io_contract"),
             "metadata key 'io_contract': expected \"hf_static\", got nothing",
             "metadata key 'io_contract' is missing or not a string " + supported);
  c.registry("missing_version", erase_meta("version"), "metadata key 'version': expected 1, got nothing",
             "metadata key 'version' is missing or not an integer " + supported);
  for (const char* key : {"n_layers", "n_kv_heads", "head_dim", "max_context", "prefill_len", "vocab_size",
                          "cache_dtype", "bos_id", "eos_ids", "prefill_method", "decode_method"})
    c.add(cat("missing_", key), erase_meta(key), {cat("metadata key '", key, "': missing")});

  // Mistyped keys.
  c.registry("mistyped_io_contract", set_meta("io_contract", 1),
             "metadata key 'io_contract': expected \"hf_static\", got 1",
             "metadata key 'io_contract' is missing or not a string " + supported);
  c.registry("mistyped_version", set_meta("version", "1"), "metadata key 'version': expected 1, got \"1\"",
             "metadata key 'version' is missing or not an integer " + supported);
  c.registry("mistyped_version_float", set_meta("version", 1.0), "metadata key 'version': expected 1, got 1.0",
             "metadata key 'version' is missing or not an integer " + supported);
  c.add("mistyped_n_layers", set_meta("n_layers", "2"), {"metadata key 'n_layers': expected an integer, got \"2\""});
  c.add("mistyped_n_kv_heads", set_meta("n_kv_heads", 2.0),
        {"metadata key 'n_kv_heads': expected an integer, got 2.0"});
  c.add("mistyped_head_dim", set_meta("head_dim", json::array({16})),
        {"metadata key 'head_dim': expected an integer, got [16]"});
  c.add("mistyped_max_context", set_meta("max_context", "16"),
        {"metadata key 'max_context': expected an integer, got \"16\""});
  c.add("mistyped_prefill_len", set_meta("prefill_len", 4.5),
        {"metadata key 'prefill_len': expected an integer, got 4.5"});
  c.add("mistyped_vocab_size", set_meta("vocab_size", nullptr),
        {"metadata key 'vocab_size': expected an integer, got null"});
  c.add("mistyped_cache_dtype", set_meta("cache_dtype", 32), {"metadata key 'cache_dtype': expected a string, got 32"});
  c.add("mistyped_bos_id", set_meta("bos_id", true), {"metadata key 'bos_id': expected an integer, got true"});
  c.add("mistyped_eos_ids", set_meta("eos_ids", 256),
        {"metadata key 'eos_ids': expected an array of token ids, got 256"});
  c.add("mistyped_eos_id_element", set_meta("eos_ids", json::array({"256"})),
        {"metadata key 'eos_ids': \"256\" is not a token id in [0, vocab_size)"});
  c.add("mistyped_prefill_method", set_meta("prefill_method", true),
        {"metadata key 'prefill_method': expected a string, got true"});
  c.add("mistyped_decode_method", set_meta("decode_method", json::array({"decode"})),
        {"metadata key 'decode_method': expected a string, got [\"decode\"]"});

  // Out of range.
  c.add("prefill_len_0", set_meta("prefill_len", 0),
        {"metadata key 'prefill_len': 0 is outside [1, max_context = 16]"});
  c.add("prefill_len_above_context", set_meta("prefill_len", 17),
        {"metadata key 'prefill_len': 17 is outside [1, max_context = 16]"});
  c.add("max_context_1", set_meta("max_context", 1), {"metadata key 'max_context': 1 is outside [2, 16777216]"});
  c.add("n_layers_0", set_meta("n_layers", 0), {"metadata key 'n_layers': 0 is outside [1, 4096]"});
  c.add("n_kv_heads_0", set_meta("n_kv_heads", 0), {"metadata key 'n_kv_heads': 0 is outside [1, 4096]"});
  c.add("head_dim_negative", set_meta("head_dim", -16), {"metadata key 'head_dim': -16 is outside [1, 65536]"});
  c.add("vocab_size_0", set_meta("vocab_size", 0), {"metadata key 'vocab_size': 0 is outside [1, 2147483647]"});
  c.add("bos_id_vocab_size", set_meta("bos_id", 272), {"metadata key 'bos_id': 272 is outside [-1, vocab_size = 272)"});
  c.add("bos_id_below_none", set_meta("bos_id", -2), {"metadata key 'bos_id': -2 is outside [-1, vocab_size = 272)"});
  c.add("eos_id_vocab_size", set_meta("eos_ids", json::array({256, 272})),
        {"metadata key 'eos_ids': 272 is not a token id in [0, vocab_size)"});
  c.add("eos_id_negative", set_meta("eos_ids", json::array({-1})),
        {"metadata key 'eos_ids': -1 is not a token id in [0, vocab_size)"});
  c.add("cache_dtype_bfloat16", set_meta("cache_dtype", "bfloat16"),
        {"metadata key 'cache_dtype': 'bfloat16' is not float32 or float16"});
  c.registry("unknown_io_contract", set_meta("io_contract", "hf_dynamic"),
             "metadata key 'io_contract': expected \"hf_static\", got \"hf_dynamic\"",
             "I/O contract 'hf_dynamic' version 1 is not supported " + supported);
  c.registry("unknown_version", set_meta("version", 3), "metadata key 'version': expected 1, got 3",
             "I/O contract 'hf_static' version 3 is not supported " + supported);

  // Metadata in range that disagrees with the method signatures.
  c.add("metadata_n_layers_3", set_meta("n_layers", 3),
        {"method 'prefill': expected 12 inputs (tokens, positions, mask, then k_cache, v_cache, counter for 3 layers), "
         "got 9",
         "method 'prefill': expected 10 outputs (9 state updates, logits) or 19 (with the state repeated after "
         "logits), got 13"});
  c.add("metadata_max_context_32", set_meta("max_context", 32),
        {"method 'prefill' input 2 (mask): expected float32 [1, 1, 4, 32], got float32 [1, 1, 4, 16]",
         "method 'decode' input 3 (k_cache of layer 0): expected float32 [1, 2, 32, 16], got float32 [1, 2, 16, 16]"});
  c.add("metadata_prefill_len_8", set_meta("prefill_len", 8),
        {"method 'prefill' input 0 (tokens): expected int64 [1, 8], got int64 [1, 4]",
         "method 'prefill' output 6 (logits): expected float32 [1, 8, 272], got float32 [1, 4, 272]"});
  c.add("metadata_vocab_size_300", set_meta("vocab_size", 300),
        {"method 'decode' output 6 (logits): expected float32 [1, 1, 300], got float32 [1, 1, 272]"});
  // Equal bytes, graph untouched: float16 [1, 2, 16, 32] is the size of the float32 [1, 2, 16, 16] caches.
  InvalidFixture* lie = c.add(
      "metadata_float16_cache_of_equal_bytes", both(set_meta("cache_dtype", "float16"), set_meta("head_dim", 32)),
      {"method 'prefill' input 3 (k_cache of layer 0): expected float16 [1, 2, 16, 32], got float32 [1, 2, 16, 16]",
       "method 'decode' output 7 (repeated k_cache of layer 0): expected float16 [1, 2, 16, 32], got float32 [1, 2, "
       "16, 16]"},
      true);
  lie->loads_without_contract_check = true;
  InvalidFixture* heads = c.add(
      "metadata_one_kv_head_of_equal_bytes", both(set_meta("n_kv_heads", 1), set_meta("head_dim", 32)),
      {"method 'decode' input 4 (v_cache of layer 0): expected float32 [1, 1, 16, 32], got float32 [1, 2, 16, 16]"},
      true);
  heads->loads_without_contract_check = true;
}

// Features version 1 excludes, method names, inputs and outputs.
void add_feature_and_signature_fixtures(InvalidCorpus& c) {
  // Features version 1 excludes.
  c.add("excluded_int8_cache", set_meta("cache_dtype", "int8"),
        {"metadata key 'cache_dtype': 'int8' is a quantized cache; quantized caches are excluded by hf_static v1"});
  c.add("excluded_fp8_cache", set_meta("cache_dtype", "fp8_e4m3"),
        {"metadata key 'cache_dtype': 'fp8_e4m3' is a quantized cache; quantized caches are excluded by hf_static v1"});
  c.add("excluded_split_single_head", set_meta("attention_layout", "split_single_head"),
        {"metadata key 'attention_layout': \"split_single_head\" is excluded by hf_static v1 (split single-head "
         "layouts are not "
         "supported; only \"grouped\")"});
  c.add("excluded_sliding_window", set_meta("cache_mode", "sliding_window"),
        {"metadata key 'cache_mode': \"sliding_window\" is excluded by hf_static v1 (full-length sliding-window caches "
         "are not "
         "supported; only \"full\")"});
  c.add("excluded_batch_2", set_meta("batch_size", 2),
        {"metadata key 'batch_size': 2 is excluded by hf_static v1 (batch size must be 1)"});

  // Method names.
  c.add("prefill_method_absent", set_meta("prefill_method", "prefill_fast"),
        {"metadata key 'prefill_method': the program has no method 'prefill_fast'"});
  c.add("decode_method_absent", set_meta("decode_method", "decode_v2"),
        {"metadata key 'decode_method': the program has no method 'decode_v2'"});
  c.add("same_method_twice", set_meta("decode_method", "prefill"),
        {"metadata keys 'prefill_method' and 'decode_method' name the same method"});

  // Inputs: rank, dimension, dtype; equal-byte swaps marked.
  const DType F32 = DType::F32, F16 = DType::F16, I64 = DType::I64, I32 = DType::I32;
  c.add("input_count_short", [](ProgramSpec& s) { method(s, "prefill").inputs.pop_back(); },
        {"method 'prefill': expected 9 inputs (tokens, positions, mask, then k_cache, v_cache, counter for 2 layers), "
         "got 8"});
  c.add("input_count_long",
        [](ProgramSpec& s) {
          method(s, "decode").inputs.push_back({"extra", DType::I64, {1}});
        },
        {"method 'decode': expected 9 inputs (tokens, positions, mask, then k_cache, v_cache, counter for 2 layers), "
         "got 10"});
  c.add("tokens_rank_1", retype("prefill", "tokens", I64, {4}),
        {"method 'prefill' input 0 (tokens): expected int64 [1, 4], got int64 [4]"}, true);
  c.add("tokens_int32", retype("prefill", "tokens", I32, {1, 4}),
        {"method 'prefill' input 0 (tokens): expected int64 [1, 4], got int32 [1, 4]"});
  c.add("tokens_int32_equal_bytes", retype("prefill", "tokens", I32, {1, 8}),
        {"method 'prefill' input 0 (tokens): expected int64 [1, 4], got int32 [1, 8]"}, true);
  c.add("tokens_length", retype("prefill", "tokens", I64, {1, 5}),
        {"method 'prefill' input 0 (tokens): expected int64 [1, 4], got int64 [1, 5]"});
  c.add("decode_tokens_prefill_length", retype("decode", "tokens", I64, {1, 4}),
        {"method 'decode' input 0 (tokens): expected int64 [1, 1], got int64 [1, 4]"});
  c.add("positions_transposed", retype("prefill", "positions", I64, {4, 1}),
        {"method 'prefill' input 1 (positions): expected int64 [1, 4], got int64 [4, 1]"}, true);
  c.add("positions_float32_equal_bytes", retype("prefill", "positions", F32, {1, 8}),
        {"method 'prefill' input 1 (positions): expected int64 [1, 4], got float32 [1, 8]"}, true);
  c.add("decode_positions_length", retype("decode", "positions", I64, {1, 2}),
        {"method 'decode' input 1 (positions): expected int64 [1, 1], got int64 [1, 2]"});
  c.add("mask_context", retype("prefill", "mask", F32, {1, 1, 4, 15}),
        {"method 'prefill' input 2 (mask): expected float32 [1, 1, 4, 16], got float32 [1, 1, 4, 15]"});
  c.add("mask_float16_equal_bytes", retype("prefill", "mask", F16, {1, 1, 4, 32}),
        {"method 'prefill' input 2 (mask): expected float32 [1, 1, 4, 16], got float16 [1, 1, 4, 32]"}, true);
  c.add("mask_rank_3", retype("prefill", "mask", F32, {1, 4, 16}),
        {"method 'prefill' input 2 (mask): expected float32 [1, 1, 4, 16], got float32 [1, 4, 16]"}, true);
  c.add("decode_mask_transposed", retype("decode", "mask", F32, {1, 1, 16, 1}),
        {"method 'decode' input 2 (mask): expected float32 [1, 1, 1, 16], got float32 [1, 1, 16, 1]"}, true);
  c.add("k_cache_float16_equal_bytes", retype("prefill", "k_cache_0", F16, {1, 2, 16, 32}),
        {"method 'prefill' input 3 (k_cache of layer 0): expected float32 [1, 2, 16, 16], got float16 [1, 2, 16, 32]"},
        true);
  c.add("v_cache_head_dim", retype("prefill", "v_cache_1", F32, {1, 2, 16, 8}),
        {"method 'prefill' input 7 (v_cache of layer 1): expected float32 [1, 2, 16, 16], got float32 [1, 2, 16, 8]"});
  c.add("v_cache_rank_3", retype("prefill", "v_cache_0", F32, {2, 16, 16}),
        {"method 'prefill' input 4 (v_cache of layer 0): expected float32 [1, 2, 16, 16], got float32 [2, 16, 16]"},
        true);
  c.add("decode_k_cache_context", retype("decode", "k_cache_1", F32, {1, 2, 15, 16}),
        {"method 'decode' input 6 (k_cache of layer 1): expected float32 [1, 2, 16, 16], got float32 [1, 2, 15, 16]"});
  c.add("counter_int32_equal_bytes", retype("prefill", "counter_0", I32, {2}),
        {"method 'prefill' input 5 (counter of layer 0): expected int64 [1], got int32 [2]"}, true);
  c.add("counter_rank_2", retype("decode", "counter_1", I64, {1, 1}),
        {"method 'decode' input 8 (counter of layer 1): expected int64 [1], got int64 [1, 1]"}, true);
  c.add("counter_length_2", retype("prefill", "counter_1", I64, {2}),
        {"method 'prefill' input 8 (counter of layer 1): expected int64 [1], got int64 [2]"});
  {
    InvalidFixture* f = c.add(
        "f16_program_k_cache_float32_equal_bytes", retype("decode", "k_cache_0", F32, {1, 2, 16, 8}),
        {"method 'decode' input 3 (k_cache of layer 0): expected float16 [1, 2, 16, 16], got float32 [1, 2, 16, 8]"},
        true);
    f->graph.cache_dtype = DType::F16;
  }
}

void add_output_fixtures(InvalidCorpus& c) {
  using enum DType;
  c.add("outputs_too_many",
        [](ProgramSpec& s) {
          method(s, "prefill").outputs.push_back({"logits_again", "logits", OutputMemory::Planned});
        },
        {"method 'prefill': expected 7 outputs (6 state updates, logits) or 13 (with the state repeated after logits), "
         "got 14"});
  c.add("outputs_too_few", [](ProgramSpec& s) { method(s, "decode").outputs.pop_back(); },
        {"method 'decode': expected 7 outputs (6 state updates, logits) or 13 (with the state repeated after logits), "
         "got 12"});
  {
    InvalidFixture* f = c.add("outputs_no_logits", [](ProgramSpec& s) { method(s, "prefill").outputs.pop_back(); },
                              {"method 'prefill': expected 7 outputs (6 state updates, logits) or 13 (with the state "
                               "repeated after logits), got 6"});
    f->graph.repeat_state = false;
  }
  c.add("logits_vocab", retype("prefill", "logits", F32, {1, 4, 271}),
        {"method 'prefill' output 6 (logits): expected float32 [1, 4, 272], got float32 [1, 4, 271]"});
  c.add("logits_float16_equal_bytes", retype("prefill", "logits", F16, {1, 4, 544}),
        {"method 'prefill' output 6 (logits): expected float32 [1, 4, 272], got float16 [1, 4, 544]"}, true);
  c.add("logits_rank_2", retype("decode", "logits", F32, {1, 272}),
        {"method 'decode' output 6 (logits): expected float32 [1, 1, 272], got float32 [1, 272]"}, true);
  c.add("logits_rows", retype("decode", "logits", F32, {1, 4, 272}),
        {"method 'decode' output 6 (logits): expected float32 [1, 1, 272], got float32 [1, 4, 272]"});
  c.add("logits_unplanned", [](ProgramSpec& s) { method(s, "prefill").outputs[6].memory = OutputMemory::Unplanned; },
        {"method 'prefill' output 6 (logits): must be planned, got unplanned"});
  c.add("logits_unresolved", [](ProgramSpec& s) { method(s, "decode").outputs[6].value = "no_such_value"; },
        {"method 'decode' output 6 (logits): expected float32 [1, 1, 272], got an unresolved value"});
  c.add("repeated_counter_int32_equal_bytes", retype("prefill", "counter_0_out", I32, {2}),
        {"method 'prefill' output 9 (repeated counter of layer 0): expected int64 [1], got int32 [2]"}, true);
  c.add("repeated_k_cache_float16_equal_bytes", retype("decode", "k_cache_1_out", F16, {1, 2, 16, 32}),
        {"method 'decode' output 10 (repeated k_cache of layer 1): expected float32 [1, 2, 16, 16], got float16 [1, 2, "
         "16, 32]"},
        true);
  c.add("repeated_v_cache_context", retype("prefill", "v_cache_1_out", F32, {1, 2, 8, 16}),
        {"method 'prefill' output 11 (repeated v_cache of layer 1): expected float32 [1, 2, 16, 16], got float32 [1, "
         "2, 8, 16]"});
  c.add("repeated_state_planned",
        [](ProgramSpec& s) { method(s, "prefill").outputs[7].memory = OutputMemory::Planned; },
        {"method 'prefill' output 7 (repeated k_cache of layer 0): must be unplanned (bound to the state buffer), got "
         "planned"});
  c.add("mutation_prefix_reports_twice", [](ProgramSpec& s) { method(s, "prefill").outputs[1].value = "k_cache_0"; },
        {"method 'prefill' output 1 (state update): reports input 3 'k_cache_0' a second time"});
  {
    // "reverse" order: counter_1, v_cache_1, k_cache_1, counter_0, v_cache_0, k_cache_0.
    InvalidFixture* f = c.add("mutation_prefix_reports_twice_reverse",
                              [](ProgramSpec& s) { method(s, "decode").outputs[5].value = "counter_1"; },
                              {"method 'decode' output 5 (state update): reports input 8 'counter_1' a second time"});
    f->graph.mutation_order = "reverse";
  }
  c.add("mutation_prefix_planned",
        [](ProgramSpec& s) { method(s, "prefill").outputs[2].memory = OutputMemory::Planned; },
        {"method 'prefill' output 2 (state update): must report a state input in place (alias), got planned value "
         "'counter_0'"});
  c.add(
      "mutation_prefix_not_state", [](ProgramSpec& s) { method(s, "decode").outputs[0].value = "mask"; },
      {"method 'decode' output 0 (state update): must report a state input in place (alias), got alias value 'mask'"});
}

std::vector<ValidFixture> make_valid_v2() {
  std::vector<ValidFixture> v;
  auto add = [&](std::string name, std::string preset, GraphOptions g, std::vector<int64_t> prompt) {
    v.push_back({std::move(name), std::move(preset), g, std::move(prompt), 6, {}, 2});
  };
  // Every prompt passes the window (5 for the *-sw presets, 6 for gemma3).
  add("v2_mistral_all_local_f32_repeat", "tiny-mistral-sw", options(4, 24, DType::F32, true), kPrompt17);
  add("v2_mistral_all_local_f16", "tiny-mistral-sw", options(8, 32, DType::F16, false, "rotate"), kPrompt14);
  // Layer 0 global, layer 1 local.
  add("v2_qwen2_mixed_f16_repeat_reverse", "tiny-qwen2-sw", options(4, 24, DType::F16, true, "reverse"), kPrompt17);
  add("v2_qwen2_mixed_prefill_1", "tiny-qwen2-sw", options(1, 16, DType::F32, true), kPrompt11);
  // 17 tokens, prefill_len 8, max_context 20: 0..15 by prefill, 16 + 8 > 20 so 16 by decode.
  add("v2_gemma3_tail_decode", "tiny-gemma3", options(8, 20, DType::F32, false), kPrompt17);
  add("v2_gemma3_f16_repeat_by_kind", "tiny-gemma3", options(6, 32, DType::F16, true, "by-kind"), kPrompt14);
  return v;
}

// The v2 corpus is built on "tiny-qwen2-sw" (layer 0 global, layer 1 local, window 5) with
// prefill_len 4, max_context 16: inputs tokens, positions, mask, local_mask, then the state.
std::vector<InvalidFixture> make_invalid_v2() {
  InvalidCorpus c;
  auto add = [&](std::string name, Mutation m, std::vector<std::string> expected) {
    InvalidFixture* f = c.add(std::move(name), std::move(m), std::move(expected));
    f->preset = "tiny-qwen2-sw";
    f->version = 2;
    return f;
  };
  const std::string window_range = " is outside [1, max_context - 1 = 15]";
  add("v2_window_0", set_meta("sliding_window", 0), {"metadata key 'sliding_window': 0" + window_range});
  add("v2_window_context", set_meta("sliding_window", 16), {"metadata key 'sliding_window': 16" + window_range});
  add("v2_window_above_context", set_meta("sliding_window", 17), {"metadata key 'sliding_window': 17" + window_range});
  add("v2_window_missing", erase_meta("sliding_window"), {"metadata key 'sliding_window': missing"});
  add("v2_window_mistyped", set_meta("sliding_window", "5"),
      {"metadata key 'sliding_window': expected an integer, got \"5\""});
  add("v2_layer_types_missing", erase_meta("layer_types"), {"metadata key 'layer_types': missing"});
  add("v2_layer_types_short", set_meta("layer_types", json::array({"local"})),
      {"metadata key 'layer_types': expected an array of n_layers = 2 entries \"global\" or \"local\", got "
       "[\"local\"]"});
  add("v2_layer_types_unknown_kind", set_meta("layer_types", json::array({"global", "sliding"})),
      {"metadata key 'layer_types': entry 1 is \"sliding\", not \"global\" or \"local\""});
  add("v2_layer_types_all_global", set_meta("layer_types", json::array({"global", "global"})),
      {"metadata key 'layer_types': no layer is \"local\"; a program without local layers is hf_static v1"});
  // Layer kinds that disagree with the graph: same bytes everywhere, only the masks differ.
  add("v2_layer_kinds_swapped", set_meta("layer_types", json::array({"local", "global"})),
      {"method 'prefill' layer 0 (local): attention reads 'mask' as its mask, expected input 3 'local_mask'",
       "method 'decode' layer 1 (global): attention reads 'local_mask' as its mask, expected input 2 'mask'"});
  add("v2_local_layer_reads_the_global_mask",
      [](ProgramSpec& s) {
        for (NodeSpec& n : method(s, "decode").nodes)
          if (n.op == "attention" && n.inputs[1] == "k_cache_1") n.inputs[3] = "mask";
      },
      {"method 'decode' layer 1 (local): attention reads 'mask' as its mask, expected input 3 'local_mask'"});
  const DType F32 = DType::F32, F16 = DType::F16;
  add("v2_local_mask_float16_equal_bytes", retype("prefill", "local_mask", F16, {1, 1, 4, 32}),
      {"method 'prefill' input 3 (local_mask): expected float32 [1, 1, 4, 16], got float16 [1, 1, 4, 32]"});
  add("v2_local_mask_transposed", retype("decode", "local_mask", F32, {1, 1, 16, 1}),
      {"method 'decode' input 3 (local_mask): expected float32 [1, 1, 1, 16], got float32 [1, 1, 16, 1]"});
  add("v2_local_mask_context", retype("prefill", "local_mask", F32, {1, 1, 4, 15}),
      {"method 'prefill' input 3 (local_mask): expected float32 [1, 1, 4, 16], got float32 [1, 1, 4, 15]"});
  add("v2_local_mask_absent",
      [](ProgramSpec& s) {
        auto& in = method(s, "prefill").inputs;
        in.erase(in.begin() + 3);
      },
      {"method 'prefill': expected 10 inputs (tokens, positions, mask, local_mask, then k_cache, v_cache, counter "
       "for 2 layers), got 9"});
  // A program with local layers labelled version 1: the v1 check refuses the v2 keys.
  InvalidFixture* v1 = add("v2_program_labelled_v1", set_meta("version", 1),
                           {"metadata key 'layer_types': sliding-window layers are excluded by hf_static v1 (they "
                            "need version 2)",
                            "metadata key 'sliding_window': sliding-window layers are excluded by hf_static v1 (they "
                            "need version 2)"});
  v1->version = 1;
  // A version 1 program labelled version 2: the v2 keys are missing.
  InvalidFixture* v2 = add("v1_program_labelled_v2", set_meta("version", 2),
                           {"metadata key 'layer_types': missing", "metadata key 'sliding_window': missing"});
  v2->preset = "tiny";
  return std::move(c.v);
}

// The invalid corpus is built on "tiny" (L 2, H 2, D 16, V 272) with prefill_len 4, max_context 16.
std::vector<InvalidFixture> make_invalid() {
  InvalidCorpus c;
  add_metadata_fixtures(c);
  add_feature_and_signature_fixtures(c);
  add_output_fixtures(c);
  return std::move(c.v);
}

std::mutex g_mutex;

// Fixture files of this process, in a folder removed at exit.
test::TempDir& corpus_dir() {
  static test::TempDir dir("contract-corpus");
  return dir;
}

std::string options_key(const std::string& preset, const GraphOptions& g) {
  return cat(preset, "-p", g.prefill_len, "-c", g.max_context, "-", dtype_name(g.cache_dtype),
             g.repeat_state ? "-repeat" : "", "-", g.mutation_order);
}

// A valid exported program per (preset, options), made once per process.
std::string base_program(const std::string& preset, const GraphOptions& g) {
  static std::map<std::string, std::string> made;
  const std::string key = options_key(preset, g);
  auto it = made.find(key);
  if (it != made.end()) return it->second;
  std::string path = corpus_dir().file("base-" + key + ".hfs");
  test::export_to(test::cached_checkpoint(preset, kSeed), path, g);
  made[key] = path;
  return path;
}

std::string materialize(const std::string& name, const std::string& preset, const GraphOptions& g,
                        const Mutation& mutate) {
  static std::map<std::string, std::string> made;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = made.find(name);
  if (it != made.end()) return it->second;
  std::string base = base_program(preset, g);
  std::string path = base;
  if (mutate) {
    auto program = Program::load(base);
    ProgramSpec spec = program->spec();
    mutate(spec);
    path = corpus_dir().file(name + ".hfs");
    write_with_spec(*program, spec, path);
  }
  made[name] = path;
  return path;
}

}  // namespace

GraphOptions base_invalid_options() { return options(4, 16, DType::F32, true); }

int ValidFixture::greedy_count() const {
  return int(std::min<int64_t>(steps, graph.max_context - int64_t(prompt.size()) + 1));
}

bool ValidFixture::tail_routed() const {
  int64_t pos = 0, n = int64_t(prompt.size());
  while (pos < n) {
    if (pos + graph.prefill_len > graph.max_context) return true;
    pos += graph.prefill_len;
  }
  return false;
}

const std::vector<ValidFixture>& valid_fixtures() {
  static const std::vector<ValidFixture> v = make_valid();
  return v;
}

const std::vector<InvalidFixture>& invalid_fixtures() {
  static const std::vector<InvalidFixture> v = make_invalid();
  return v;
}

const std::vector<ValidFixture>& valid_v2_fixtures() {
  static const std::vector<ValidFixture> v = make_valid_v2();
  return v;
}

const std::vector<InvalidFixture>& invalid_v2_fixtures() {
  static const std::vector<InvalidFixture> v = make_invalid_v2();
  return v;
}

const ValidFixture& valid_fixture(const std::string& name) {
  for (const auto* corpus : {&valid_fixtures(), &valid_v2_fixtures()})
    for (const auto& f : *corpus)
      if (f.name == name) return f;
  fail("no valid fixture '", name, "'");
}

const InvalidFixture& invalid_fixture(const std::string& name) {
  for (const auto* corpus : {&invalid_fixtures(), &invalid_v2_fixtures()})
    for (const auto& f : *corpus)
      if (f.name == name) return f;
  fail("no invalid fixture '", name, "'");
}

std::string fixture_path(const ValidFixture& f) { return materialize("valid-" + f.name, f.preset, f.graph, f.edit); }
std::string fixture_path(const InvalidFixture& f) {
  return materialize("invalid-" + f.name, f.preset, f.graph, f.mutate);
}

void write_with_spec(const Program& source, const ProgramSpec& spec, const std::string& path) {
  ProgramWriter writer(spec);
  const std::string prefix = kEmbeddedFilePrefix;
  for (const TensorInfo& t : source.container().tensors()) {
    const uint8_t* data = source.container().tensor_data(t);
    if (t.name.rfind(prefix, 0) == 0)
      writer.add_file(t.name.substr(prefix.size()), std::string(reinterpret_cast<const char*>(data), t.size));
    else
      writer.add_weight_bytes(t.name, t.dtype, t.shape, std::vector<uint8_t>(data, data + t.size));
  }
  writer.write(path);
}

std::vector<int64_t> reference_greedy(const std::string& preset, const std::vector<int64_t>& prompt, int steps,
                                      DType cache_dtype) {
  namespace fs = std::filesystem;
  std::string key = cat(preset, "-s", kSeed, "-", dtype_name(cache_dtype), "-n", steps, "-t");
  for (int64_t t : prompt) key += cat(t, "_");
  const std::string dir = std::string(HFSTATIC_BINARY_DIR) + "/test-scratch/contract-reference";
  fs::create_directories(dir);
  const std::string file = dir + "/" + key + ".json";
  if (!file_exists(file)) {
    nlohmann::json ref =
        test::reference(test::cached_checkpoint(preset, kSeed), prompt, steps, dtype_name(cache_dtype));
    const std::string tmp = cat(file, ".", ::getpid(), ".tmp");
    {
      std::ofstream out(tmp);
      out << nlohmann::json(ref["greedy_tokens"]).dump();
    }
    fs::rename(tmp, file);
  }
  return nlohmann::json::parse(read_text_file(file)).get<std::vector<int64_t>>();
}

std::vector<int64_t> greedy_generate(IOManager& io, const std::vector<int64_t>& prompt, int steps) {
  Status s = io.feed(0, prompt);
  if (!s.ok()) fail("feeding the prompt failed: ", s.message());
  const int64_t C = io.model().max_context;
  int64_t pos = int64_t(prompt.size());
  std::vector<int64_t> out;
  for (int i = 0; i < steps; ++i) {
    std::span<const float> logits = io.logits();
    int64_t next = std::max_element(logits.begin(), logits.end()) - logits.begin();
    out.push_back(next);
    if (i + 1 == steps || pos >= C) break;
    const std::vector<int64_t> one = {next};
    Status st = io.step(StepKind::Decode, pos++, one, nullptr);
    if (!st.ok()) fail("decode step failed: ", st.message());
  }
  return out;
}

}  // namespace hfstatic::contract
