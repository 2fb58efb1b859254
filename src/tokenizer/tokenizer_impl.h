// Internal data structures of Tokenizer (not part of the public API), and the functions of its
// components, one file each along Hugging Face's pipeline: normalizer.cpp, pre_tokenizer.cpp,
// model_bpe.cpp, post_processor.cpp and decoder.cpp, each reading its part of tokenizer.json and
// applying it; tokenizer.cpp assembles them, with the added tokens and tokenizer_config.json.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/regex.h"
#include "tokenizer/split_pattern.h"
#include "tokenizer/tokenizer.h"

namespace hfstatic::tokenizer {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using StringMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// Open-addressing map from a token pair to (merge rank, merged id).
class MergeTable {
 public:
  void reserve(size_t n);
  void insert(int32_t a, int32_t b, int32_t rank, int32_t merged);
  // Returns false when the pair has no merge.
  bool find(int32_t a, int32_t b, int32_t& rank, int32_t& merged) const {
    if (slots_.empty()) return false;
    const uint64_t key = pack(a, b);
    for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) {
        rank = s.rank;
        merged = s.merged;
        return true;
      }
      if (s.key == kEmpty) return false;
    }
  }
  size_t size() const { return count_; }

 private:
  struct Slot {
    uint64_t key;
    int32_t rank;
    int32_t merged;
  };
  static constexpr uint64_t kEmpty = ~0ull;
  static uint64_t pack(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  static size_t hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return static_cast<size_t>(k);
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t count_ = 0;
};

enum class ModelType { kBpe, kWordPiece, kUnigram };

enum class NormalizerType {
  kSequence,
  kNfc,
  kNfd,
  kNfkc,
  kNfkd,
  kReplace,
  kPrepend,
  kStrip,
  kLowercase,
  kStripAccents,
  kBert,
  kPrecompiled
};
struct PrecompiledCharsmap;
struct Normalizer {
  NormalizerType type;
  std::string name;              // for errors: where it is in tokenizer.json and its type
  double growth = 1;             // how many times its input it may make at most (1 where unknown)
  std::string pattern, content;  // Replace: pattern (or regex) -> content; Prepend: content
  std::shared_ptr<const Regex> regex;
  bool strip_left = false, strip_right = false;
  // BertNormalizer
  bool clean_text = false, handle_chinese_chars = false, strip_accents = false, lowercase = false;
  std::shared_ptr<const PrecompiledCharsmap> charsmap;
  std::vector<Normalizer> children;
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
enum class PreTokenizerType { kSequence, kByteLevel, kSplit, kMetaspace };
// Split on single characters of a set, each one a delimiter (Punctuation, Digits, WhitespaceSplit,
// BertPreTokenizer, CharDelimiterSplit).
enum class CharSet : uint8_t { kNone, kPunctuation, kNumeric, kWhitespace, kOneChar };
enum class PrependScheme { kAlways, kFirst, kNever };
struct PreTokenizer {
  PreTokenizerType type;
  // ByteLevel
  bool add_prefix_space = false;
  bool use_regex = false;
  // Split: a literal string, a built-in regex matcher, a compiled regex or a character set
  std::optional<SplitPattern> regex;
  std::shared_ptr<const Regex> general_regex;
  std::string literal;
  CharSet char_set = CharSet::kNone;
  char32_t delimiter = 0;  // CharSet::kOneChar
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  bool js_space = false;  // ByteLevel's built-in pattern uses JavaScript \s (reference parity)
  // Metaspace
  std::string replacement;
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  bool split = true;
  std::vector<PreTokenizer> children;
};

enum class DecoderType {
  kSequence,
  kByteLevel,
  kReplace,
  kByteFallback,
  kFuse,
  kStrip,
  kMetaspace,
  kWordPiece,
  kBpe,
  kCtc
};
struct Decoder {
  DecoderType type;
  std::string name;              // for errors: where it is in tokenizer.json and its type
  std::string pattern, content;  // Replace (a string or `regex`); Strip uses content
  std::shared_ptr<const Regex> regex;
  std::string prefix;                           // WordPiece prefix, BPEDecoder suffix
  std::string pad_token, word_delimiter_token;  // CTC
  bool cleanup = false;                         // WordPiece, CTC
  size_t start = 0, stop = 0;                   // Strip
  std::string replacement;                      // Metaspace
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  std::vector<Decoder> children;
};

// Byte-level alphabet (GPT-2's bytes_to_unicode), shared by the ByteLevel pre-tokenizer and decoder.
struct ByteLevelTables {
  char utf8[256][3];
  uint8_t len[256];
  int16_t char_to_byte[0x200];  // mapped code points are all below U+0200
  ByteLevelTables();
};

const ByteLevelTables& byte_level();

// Pre-tokenization works on one buffer and a list of [begin, end) pieces in it.
struct Pieces {
  std::string buf;
  std::vector<std::pair<size_t, size_t>> ranges;
};

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false, lstrip = false, rstrip = false, single_word = false, normalized = false;
};

// Byte trie over added token contents for leftmost-longest matching.
struct AddedTrie {
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> next;  // sorted by byte
    int32_t token = -1;                                   // index into added tokens
  };
  std::vector<Node> nodes{Node{}};
  bool first_byte[256] = {};
  void insert(std::string_view s, int32_t token_index);
  int32_t child(int32_t node, unsigned char c) const;
};

}  // namespace hfstatic::tokenizer

namespace hfstatic {

struct Tokenizer::Impl {
  tokenizer::ModelType model_type = tokenizer::ModelType::kBpe;
  // WordPiece
  size_t max_input_chars_per_word = 100;
  size_t max_token_bytes = 0;  // the longest vocabulary entry, which bounds the WordPiece search
  // Unigram: piece scores by id and a byte trie of the pieces (token = id)
  std::vector<double> scores;
  double unk_score = 0;
  tokenizer::AddedTrie pieces;

  // Model (BPE)
  std::vector<std::string> id_to_token;
  tokenizer::StringMap vocab;
  tokenizer::MergeTable merges;
  std::optional<int32_t> unk_id;
  bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
  std::string continuing_subword_prefix, end_of_word_suffix;
  int32_t byte_fallback_ids[256];
  std::vector<int32_t> bmp_char_ids;  // id of each single-code-point token below U+10000, or -1
  bool has_byte_fallback_ids = false;

  // Components
  std::optional<tokenizer::Normalizer> normalizer;
  std::optional<tokenizer::PreTokenizer> pre_tokenizer;
  std::optional<tokenizer::Decoder> decoder;
  std::vector<int32_t> post_prefix, post_suffix;  // ids around the sequence when add_special_tokens

  // Added tokens
  std::vector<tokenizer::AddedToken> added;
  std::vector<int8_t> added_kind;  // per id: 0 none, 1 added, 2 special added
  tokenizer::AddedTrie trie_all, trie_nonspecial;

  // tokenizer_config.json
  std::string bos_token, eos_token, chat_template;
  std::optional<int32_t> bos_id, eos_id;
  bool clean_up_tokenization_spaces = false;

  // Word cache for BPE results.
  mutable std::mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<int32_t>, tokenizer::StringHash, std::equal_to<>> cache;

  // Whether decoding cleans up tokenization spaces (tokenizer_config.json or a WordPiece/CTC decoder).
  bool cleans_up_spaces() const;
  void model_word(std::string_view word, std::vector<int32_t>& out) const;
  void bpe_word(std::string_view word, std::vector<int32_t>& out) const;
  void wordpiece_word(std::string_view word, std::vector<int32_t>& out) const;
  void unigram_word(std::string_view word, std::vector<int32_t>& out) const;
  void merge_symbols(std::vector<int32_t>& syms) const;
  // Throws TokenLimitError when `out` would pass max_tokens ids.
  void encode_section(std::string_view text, bool first_section, std::vector<int32_t>& out, size_t max_tokens) const;
  // The most bytes of a pre-tokenized piece one token stands for; 0 when unbounded (unknown
  // characters fused into one unk, WordPiece's unk for a whole word).
  size_t max_piece_bytes_per_token = 0;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special) const;
};

}  // namespace hfstatic

namespace hfstatic::tokenizer {

// Fields of tokenizer.json, with errors that name the key (tokenizer.cpp).
const nlohmann::json& require(const nlohmann::json& obj, const char* key, const std::string& where);
std::string get_string(const nlohmann::json& obj, const char* key, const std::string& where);
bool get_bool(const nlohmann::json& obj, const char* key, bool fallback);
std::string pattern_string(const nlohmann::json& pattern, const std::string& where, bool* is_regex);
PrependScheme parse_prepend_scheme(const nlohmann::json& j, const std::string& where);
std::optional<int32_t> lookup_token(const Tokenizer::Impl& t, std::string_view s);

// Text helpers (tokenizer.cpp).
// Replaces every occurrence; false, with `s` unchanged, when the result would pass `limit` bytes.
bool replace_all(std::string& s, std::string_view from, std::string_view to, size_t limit = SIZE_MAX);
char32_t cp_before(std::string_view s, size_t pos);  // the code point ending at pos; 0 at the start

// What a normalizer chain, or a decoder's Replace, may make of its input: at most kGrowthFactor
// times its bytes plus kGrowthSlack, and never over kMaxGrownBytes. Real files stay far below
// (NFKC makes at most 11 bytes of one, Replace " " -> "\u2581" 3); past it an encode is refused.
inline constexpr size_t kGrowthFactor = 32;
inline constexpr size_t kGrowthSlack = size_t{64} << 10;
inline constexpr size_t kMaxGrownBytes = size_t{512} << 20;
inline size_t growth_limit(size_t input_bytes) {
  return std::min(kMaxGrownBytes, std::min(input_bytes, kMaxGrownBytes) * kGrowthFactor + kGrowthSlack);
}
// Checked at load: what a Replace or Prepend inserts, and the product of the growth factors of a
// normalizer chain (40 Replaces "a" -> "aa" would make 2^40 bytes of one).
inline constexpr size_t kMaxInsertBytes = 1024;
inline constexpr double kMaxChainGrowth = double(1 << 20);
// "WHAT: the output grows past N bytes (...)" for a refused encode or decode.
[[noreturn]] void fail_growth(const std::string& what, size_t input_bytes);

// normalizer.cpp
Normalizer parse_normalizer(const nlohmann::json& j, const std::string& where);
// Throws Error naming the normalizer when its output would pass growth_limit(s.size()).
void apply_normalizer(const Normalizer& n, std::string& s);

// precompiled.cpp: SentencePiece's precompiled_charsmap (a double-array trie over UTF-8 with the
// normalized strings after it).
std::shared_ptr<const PrecompiledCharsmap> parse_precompiled_charsmap(const nlohmann::json& j,
                                                                      const std::string& where);
// Returns false when the result would pass `limit` bytes.
bool apply_precompiled(const PrecompiledCharsmap& charsmap, std::string_view s, std::string& out,
                       size_t limit = SIZE_MAX);

// pre_tokenizer.cpp
PreTokenizer parse_pre_tokenizer(const nlohmann::json& j, const std::string& where);
void apply_pre_tokenizer(const PreTokenizer& p, bool first_section, Pieces& in, Pieces& out);

// model_bpe.cpp: model.type, and a check of model.vocab that returns its largest id.
ModelType parse_model_type(const nlohmann::json& model);
int32_t vocab_max_id(const nlohmann::json& model, int64_t id_limit);

// Ids are indexes into per-id tables allocated at load, so a file may only use ids its entries
// justify: below twice the number of entries (vocab plus added tokens) plus 1024, and never at or
// above kMaxTokenId (real vocabularies have at most a few hundred thousand tokens).
inline constexpr int64_t kMaxTokenId = int64_t{1} << 24;
inline int64_t token_id_limit(size_t entries) {
  return std::min<int64_t>(kMaxTokenId, 2 * static_cast<int64_t>(std::min<size_t>(entries, kMaxTokenId)) + 1024);
}
// "id N is out of range [0, limit)" with why.
std::string token_id_range_error(int64_t id, int64_t id_limit);
// Fills the model fields of t (id_to_token is already sized); `added_count` more tokens follow.
void parse_bpe_model(Tokenizer::Impl& t, const nlohmann::json& model, size_t added_count);
// model_wordpiece.cpp: the vocabulary is an object as for BPE.
void parse_wordpiece_model(Tokenizer::Impl& t, const nlohmann::json& model, size_t added_count);
// model_unigram.cpp: model.vocab is a list of [piece, score]; ids are positions in it.
int32_t unigram_vocab_max_id(const nlohmann::json& model, int64_t id_limit);
void parse_unigram_model(Tokenizer::Impl& t, const nlohmann::json& model, size_t added_count);

// post_processor.cpp: the ids it puts around a sequence (t.post_prefix, t.post_suffix).
void parse_post_processor(Tokenizer::Impl& t, const nlohmann::json& j, const std::string& where);
// Files without a post-processor follow tokenizer_config.json's add_bos_token / add_eos_token.
void config_post_processor(Tokenizer::Impl& t, const nlohmann::json& config);

// decoder.cpp
Decoder parse_decoder(const nlohmann::json& j, const std::string& where);
void apply_decoder(const Decoder& d, std::vector<std::string>& tokens);
std::string clean_up_tokenization(std::string s);  // tokenizer_config.json's clean_up_tokenization_spaces

}  // namespace hfstatic::tokenizer
