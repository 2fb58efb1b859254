// The Precompiled normalizer: SentencePiece's precompiled_charsmap, base64 of a little-endian
// uint32 trie size, a darts-clone double-array trie over UTF-8 bytes of that many bytes, and the
// NUL-terminated normalized strings its values point to. Text is normalized one grapheme cluster
// at a time, as Hugging Face does: a short cluster the trie maps as a whole is replaced, otherwise
// each code point is looked up; the first (shortest) prefix match wins. Every trie access is
// bounds-checked, so hostile data can only produce a wrong mapping or a load error.
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace hfstatic::tokenizer {

struct PrecompiledCharsmap {
  std::vector<uint32_t> units;
  std::string normalized;  // the string pool

  // The normalized string of the first key in the trie that is a prefix of `key`, or nullopt.
  std::optional<std::string_view> transform(std::string_view key) const {
    if (units.empty()) return std::nullopt;
    size_t node = offset(units[0]);
    for (char ch : key) {
      const auto byte = static_cast<unsigned char>(ch);
      node ^= byte;
      if (node >= units.size()) return std::nullopt;
      const uint32_t unit = units[node];
      if ((unit & (0x80000000u | 0xFFu)) != byte) return std::nullopt;
      node ^= offset(unit);
      if (node >= units.size()) return std::nullopt;
      if ((unit >> 8) & 1) {
        const size_t value = units[node] & 0x7FFFFFFFu;
        if (value >= normalized.size()) return std::nullopt;
        const size_t end = normalized.find('\0', value);
        return std::string_view(normalized).substr(value, (end == std::string::npos ? normalized.size() : end) - value);
      }
    }
    return std::nullopt;
  }

 private:
  static size_t offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }
};

namespace {

std::string base64_decode(std::string_view in, const std::string& where) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(in.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    const int v = value(c);
    if (v < 0) fail(where, ".precompiled_charsmap: invalid base64");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

// Extended grapheme clusters, simplified: a code point with the marks, variation selectors,
// emoji modifiers and ZWJ-joined code points that follow it.
size_t cluster_end(std::string_view s, size_t i) {
  const char* end = s.data() + s.size();
  char32_t cp;
  i += unicode::decode(s.data() + i, end, cp);
  bool joined = cp == 0x200D;
  while (i < s.size()) {
    char32_t next;
    const size_t len = unicode::decode(s.data() + i, end, next);
    const bool extend = unicode::is_mark(unicode::category(next)) || next == 0x200D ||
                        (next >= 0xFE00 && next <= 0xFE0F) || (next >= 0x1F3FB && next <= 0x1F3FF) ||
                        (next >= 0xE0020 && next <= 0xE007F);
    if (!extend && !joined) break;
    joined = next == 0x200D;
    i += len;
  }
  return i;
}

}  // namespace

std::shared_ptr<const PrecompiledCharsmap> parse_precompiled_charsmap(const nlohmann::json& j,
                                                                      const std::string& where) {
  auto map = std::make_shared<PrecompiledCharsmap>();
  if (!j.contains("precompiled_charsmap") || j["precompiled_charsmap"].is_null()) return map;  // identity
  if (!j["precompiled_charsmap"].is_string()) fail(where, ".precompiled_charsmap: expected a base64 string");
  const std::string blob = base64_decode(j["precompiled_charsmap"].get_ref<const std::string&>(), where);
  if (blob.empty()) return map;
  if (blob.size() < 4) fail(where, ".precompiled_charsmap: shorter than its 4-byte header");
  const uint32_t trie_size = static_cast<uint32_t>(static_cast<unsigned char>(blob[0])) |
                             static_cast<uint32_t>(static_cast<unsigned char>(blob[1])) << 8 |
                             static_cast<uint32_t>(static_cast<unsigned char>(blob[2])) << 16 |
                             static_cast<uint32_t>(static_cast<unsigned char>(blob[3])) << 24;
  if (trie_size % 4 != 0 || trie_size > blob.size() - 4)
    fail(where, ".precompiled_charsmap: trie size ", trie_size, " does not fit the ", blob.size(), "-byte blob");
  map->units.resize(trie_size / 4);
  for (size_t k = 0; k < map->units.size(); ++k) {
    const size_t b = 4 + 4 * k;
    map->units[k] = static_cast<uint32_t>(static_cast<unsigned char>(blob[b])) |
                    static_cast<uint32_t>(static_cast<unsigned char>(blob[b + 1])) << 8 |
                    static_cast<uint32_t>(static_cast<unsigned char>(blob[b + 2])) << 16 |
                    static_cast<uint32_t>(static_cast<unsigned char>(blob[b + 3])) << 24;
  }
  map->normalized = blob.substr(4 + trie_size);
  return map;
}

bool apply_precompiled(const PrecompiledCharsmap& charsmap, std::string_view s, std::string& result, size_t limit) {
  if (charsmap.units.empty()) {
    result.assign(s);
    return true;
  }
  std::string out;
  out.reserve(s.size());
  const char* end = s.data() + s.size();
  for (size_t i = 0; i < s.size();) {
    const size_t e = cluster_end(s, i);
    const std::string_view cluster = s.substr(i, e - i);
    i = e;
    if (out.size() > limit) return false;
    if (cluster.size() < 6) {
      if (auto mapped = charsmap.transform(cluster)) {
        if (mapped->size() > limit - out.size()) return false;
        out.append(*mapped);
        continue;
      }
    }
    for (size_t k = 0; k < cluster.size();) {
      char32_t cp;
      const size_t len = unicode::decode(cluster.data() + k, end, cp);
      const std::string_view ch = cluster.substr(k, len);
      k += len;
      const std::string_view piece = charsmap.transform(ch).value_or(ch);
      if (piece.size() > limit - std::min(limit, out.size())) return false;
      out.append(piece);
    }
  }
  result = unicode::to_valid_utf8(out);
  return result.size() <= limit;
}

}  // namespace hfstatic::tokenizer
