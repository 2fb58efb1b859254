#include "export/make_checkpoint.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "export/hf_config.h"
#include "format/safetensors.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace hfstatic {

using nlohmann::json;

// Each family's presets (family_spec.h), in table order.
const std::vector<CheckpointPreset>& checkpoint_presets() {
  static const std::vector<CheckpointPreset> presets = [] {
    std::vector<CheckpointPreset> all;
    for (const FamilySpec& family : families()) all.insert(all.end(), family.presets.begin(), family.presets.end());
    return all;
  }();
  return presets;
}

const CheckpointPreset& find_checkpoint_preset(const std::string& name) {
  std::string names;
  for (const auto& p : checkpoint_presets()) {
    if (p.name == name) return p;
    names += (names.empty() ? "" : ", ") + p.name;
  }
  fail("unknown preset '", name, "' (presets: ", names, ")");
}

namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Deterministic normal samples per (seed, tensor name), independent of generation order.
class NormalStream {
 public:
  NormalStream(uint64_t seed, const std::string& name) : state_(seed) {
    for (unsigned char ch : name) state_ = (state_ ^ ch) * 0x100000001b3ull;
  }
  double next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = (double(splitmix64(state_) >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    double u2 = double(splitmix64(state_) >> 11) * 0x1.0p-53;
    double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2 * M_PI * u2);
    has_spare_ = true;
    return r * std::cos(2 * M_PI * u2);
  }

 private:
  uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

// GPT-2's reversible byte -> printable code point mapping used by ByteLevel tokenizers.
std::string byte_level_token(int byte) {
  int cp;
  bool printable = (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || (byte >= 174 && byte <= 255);
  if (printable) {
    cp = byte;
  } else {
    int n = 0;
    for (int b = 0; b < byte; ++b)
      if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) ++n;
    cp = 256 + n;
  }
  std::string out;
  if (cp < 0x80) {
    out += char(cp);
  } else {
    out += char(0xc0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3f));
  }
  return out;
}

// What a preset's tokenizer holds besides the 256 byte tokens.
struct TokenizerLayout {
  std::vector<std::pair<std::string, int>> specials;  // content, id
  int first_byte_id = 0;                              // byte b is token first_byte_id + b
  std::string bos, eos;
  bool bos_prefix = false;  // encoding with special tokens prepends bos
  std::string chat_template;
};

TokenizerLayout tokenizer_layout(const HfConfig& config) {
  TokenizerLayout t;
  if (config.family->preset_tokenizer == PresetTokenizer::Gemma) {
    // Gemma's special ids (pad 0, eos 1, bos 2, unk 3; the turn markers at 105 and 106 when the
    // vocabulary has room), the bytes after them.
    const int turn = config.vocab_size > 1024 ? 105 : 4;
    t.specials = {
        {"<pad>", 0}, {"<eos>", 1}, {"<bos>", 2}, {"<unk>", 3}, {"<start_of_turn>", turn}, {"<end_of_turn>", turn + 1}};
    t.first_byte_id = turn + 2;
    t.bos = "<bos>";
    t.eos = "<end_of_turn>";
    t.bos_prefix = true;
    t.chat_template =
        "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'assistant' %}{% set role = 'model' %}"
        "{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\\n' }}"
        "{{ message['content'] | trim }}{{ '<end_of_turn>\\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}";
    return t;
  }
  const char* specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  for (int i = 0; i < 3 && 256 + i < config.vocab_size; ++i) t.specials.push_back({specials[i], 256 + i});
  t.bos = "<|endoftext|>";
  t.eos = config.vocab_size > 258 ? "<|im_end|>" : "<|endoftext|>";
  t.chat_template =
      "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
      "'\\n' }}"
      "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
  return t;
}

// A byte-level BPE tokenizer with no merges: every byte is a token, followed or preceded by the
// special tokens. Enough for text in and out of random models.
void write_tokenizer(const std::string& dir, const HfConfig& config) {
  const TokenizerLayout layout = tokenizer_layout(config);
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level_token(b)] = layout.first_byte_id + b;
  json added = json::array();
  for (const auto& [content, id] : layout.specials) {
    vocab[content] = id;
    added.push_back({{"id", id},
                     {"content", content},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  json post_processor = {
      {"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}};
  if (layout.bos_prefix) {
    const int bos_id = vocab[layout.bos].get<int>();
    const json bos = {{"SpecialToken", {{"id", layout.bos}, {"type_id", 0}}}};
    auto sequence = [](const char* id, int type) { return json{{"Sequence", {{"id", id}, {"type_id", type}}}}; };
    json special = json::object();
    special[layout.bos] = {{"id", layout.bos}, {"ids", json::array({bos_id})}, {"tokens", json::array({layout.bos})}};
    post_processor = {{"type", "TemplateProcessing"},
                      {"single", json::array({bos, sequence("A", 0)})},
                      {"pair", json::array({bos, sequence("A", 0), sequence("B", 1)})},
                      {"special_tokens", special}};
  }
  json tokenizer = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"post_processor", post_processor},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", vocab},
        {"merges", json::array()}}},
  };
  json tokenizer_config = {
      {"add_bos_token", layout.bos_prefix},
      {"add_eos_token", false},
      {"bos_token", layout.bos},
      {"eos_token", layout.eos},
      {"model_max_length", config.max_position_embeddings},
      {"tokenizer_class", "PreTrainedTokenizerFast"},
      {"chat_template", layout.chat_template},
  };
  AtomicFileWriter t(dir + "/tokenizer.json");
  std::string text = tokenizer.dump(2);
  t.write(text.data(), text.size());
  t.commit();
  AtomicFileWriter tc(dir + "/tokenizer_config.json");
  text = tokenizer_config.dump(2);
  tc.write(text.data(), text.size());
  tc.commit();
}

// Keeps the first n layers: num_hidden_layers, and the per-layer lists of the config.
void cut_layers(json& config, int64_t n) {
  if (n < 1 || n > config.value("num_hidden_layers", int64_t(0)))
    fail("--num-layers ", n, " is outside [1, ", config.value("num_hidden_layers", int64_t(0)),
         "], the preset's layers");
  config["num_hidden_layers"] = n;
  for (const char* key : {"layer_types", "no_rope_layers"})
    if (config.contains(key) && config[key].is_array() && int64_t(config[key].size()) > n)
      config[key].erase(config[key].begin() + n, config[key].end());
  if (config.contains("mlp_only_layers") && config["mlp_only_layers"].is_array()) {
    json kept = json::array();
    for (const json& l : config["mlp_only_layers"])
      if (l.is_number_integer() && l.get<int64_t>() < n) kept.push_back(l);
    config["mlp_only_layers"] = kept;
  }
}

void write_text(const std::string& path, const std::string& text) {
  AtomicFileWriter w(path);
  w.write(text.data(), text.size());
  w.commit();
}

}  // namespace

void make_checkpoint(const std::string& dir, const MakeCheckpointOptions& options) {
  const CheckpointPreset& preset = find_checkpoint_preset(options.preset);
  json config_json = json::parse(preset.config_json);
  const DType dtype = options.dtype.value_or(preset.dtype);
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
    fail("--dtype ", dtype_name(dtype), " is not a weight dtype (float32, float16, bfloat16)");
  config_json["torch_dtype"] = dtype_name(dtype);
  config_json["transformers_version"] = "4.46.0";
  if (options.num_layers) cut_layers(config_json, *options.num_layers);
  HfConfig config = HfConfig::parse(config_json, "preset " + preset.name);

  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) fail(dir, ": cannot create folder: ", std::strerror(errno));
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) fail(dir, ": is not a folder");

  std::vector<WeightUse> tensors = expected_tensors(config);
  // A multimodal preset's other towers: some of their tensors, what export skips.
  if (config.family->text_model && config.family->text_model->other_tensors)
    for (auto& [name, shape] : config.family->text_model->other_tensors(config_json)) tensors.push_back({name, shape});
  // Group tensors into shards of about shard_bytes (one shard when 0).
  std::vector<std::vector<const WeightUse*>> shards(1);
  uint64_t current = 0;
  for (const auto& t : tensors) {
    uint64_t bytes = uint64_t(*shape_numel(t.shape)) * dtype_size(dtype);
    if (options.shard_bytes > 0 && current > 0 && current + bytes > options.shard_bytes) {
      shards.emplace_back();
      current = 0;
    }
    shards.back().push_back(&t);
    current += bytes;
  }

  json weight_map = json::object();
  uint64_t total_bytes = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
    const std::string file = shards.size() == 1 ? "model.safetensors" : name;
    SafetensorsWriter writer;
    writer.set_metadata("format", "pt");
    for (const WeightUse* t : shards[s]) {
      const std::string tname = t->name;
      const bool is_norm = tname.find("norm.weight") != std::string::npos;
      const double norm_center = config.norm_plus_one ? 0.0 : 1.0;  // gemma's norms scale by 1 + w
      const double std_dev = preset.init_std;
      const uint64_t seed = options.seed;
      const int64_t n = *shape_numel(t->shape);
      writer.add(tname, dtype, t->shape, [=](uint8_t* dst) {
        NormalStream rng(seed, tname);
        std::vector<float> values(static_cast<size_t>(n));
        for (auto& v : values) v = float(is_norm ? norm_center + 0.1 * rng.next() : std_dev * rng.next());
        convert_floats(values.data(), DType::F32, dst, dtype, values.size());
      });
      weight_map[tname] = file;
      total_bytes += uint64_t(n) * dtype_size(dtype);
    }
    writer.write(dir + "/" + file);
  }
  if (shards.size() > 1) {
    json index = {{"metadata", {{"total_size", total_bytes}}}, {"weight_map", weight_map}};
    write_text(dir + "/model.safetensors.index.json", index.dump(2));
  }
  write_text(dir + "/config.json", config_json.dump(2));
  json generation = {{"_from_model_config", true}, {"transformers_version", "4.46.0"}};
  if (config_json.contains("bos_token_id")) generation["bos_token_id"] = config_json["bos_token_id"];
  if (config_json.contains("eos_token_id")) generation["eos_token_id"] = config_json["eos_token_id"];
  write_text(dir + "/generation_config.json", generation.dump(2));
  write_tokenizer(dir, config);
}

}  // namespace hfstatic
