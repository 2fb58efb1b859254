// Decoders: Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, WordPiece, BPEDecoder
// and CTC, applied to the list of token strings; and tokenizer_config.json's clean-up of
// tokenization spaces.
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace hfstatic::tokenizer {

using json = nlohmann::json;

Decoder parse_decoder(const json& j, const std::string& where) {
  const std::string type = get_string(j, "type", where);
  Decoder d{};
  if (type == "Sequence") {
    d.type = DecoderType::kSequence;
    const json& list = require(j, "decoders", where);
    if (!list.is_array()) fail(where, ".decoders: expected an array");
    for (size_t i = 0; i < list.size(); ++i)
      d.children.push_back(parse_decoder(list[i], cat(where, ".decoders[", i, "]")));
  } else if (type == "ByteLevel") {
    d.type = DecoderType::kByteLevel;
  } else if (type == "Replace") {
    d.type = DecoderType::kReplace;
    bool is_regex = false;
    d.pattern = pattern_string(require(j, "pattern", where), where, &is_regex);
    if (is_regex) {
      try {
        d.regex = std::make_shared<const Regex>(d.pattern);
      } catch (const Error& e) {
        fail(where, ".pattern: ", e.what());
      }
    } else if (d.pattern.empty()) {
      fail(where, ".pattern: empty String pattern");
    }
    d.content = get_string(j, "content", where);
    if (d.content.size() > kMaxInsertBytes)
      fail(where, ".content: ", d.content.size(), " bytes; what a Replace inserts is at most ", kMaxInsertBytes,
           " bytes");
    d.name = cat(where, " (Replace)");
  } else if (type == "WordPiece") {
    d.type = DecoderType::kWordPiece;
    d.prefix = j.contains("prefix") && j["prefix"].is_string() ? j["prefix"].get<std::string>() : "##";
    d.cleanup = get_bool(j, "cleanup", true);
  } else if (type == "BPEDecoder") {
    d.type = DecoderType::kBpe;
    d.prefix = j.contains("suffix") && j["suffix"].is_string() ? j["suffix"].get<std::string>() : "</w>";
  } else if (type == "CTC") {
    d.type = DecoderType::kCtc;
    d.pad_token = j.contains("pad_token") && j["pad_token"].is_string() ? j["pad_token"].get<std::string>() : "<pad>";
    d.word_delimiter_token = j.contains("word_delimiter_token") && j["word_delimiter_token"].is_string()
                                 ? j["word_delimiter_token"].get<std::string>()
                                 : "|";
    d.cleanup = get_bool(j, "cleanup", true);
  } else if (type == "ByteFallback") {
    d.type = DecoderType::kByteFallback;
  } else if (type == "Fuse") {
    d.type = DecoderType::kFuse;
  } else if (type == "Strip") {
    d.type = DecoderType::kStrip;
    d.content = get_string(j, "content", where);
    d.start = j.value("start", size_t{0});
    d.stop = j.value("stop", size_t{0});
  } else if (type == "Metaspace") {
    d.type = DecoderType::kMetaspace;
    d.replacement = j.contains("replacement") && j["replacement"].is_string() ? j["replacement"].get<std::string>()
                                                                              : std::string("\xE2\x96\x81");
    d.prepend_scheme = parse_prepend_scheme(j, where);
  } else {
    fail(where, ": unsupported decoder type \"", type, "\"");
  }
  return d;
}

std::string clean_up_tokenization(std::string s) {
  static const std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) replace_all(s, from, to);
  return s;
}

namespace {

// ByteFallback: runs of <0xXX> tokens become their bytes, or one U+FFFD per byte when invalid.
void apply_byte_fallback(std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  std::string pending;
  size_t pending_count = 0;
  auto flush = [&] {
    if (pending_count == 0) return;
    if (unicode::is_valid_utf8(pending)) {
      out.push_back(pending);
    } else {
      std::string rep;
      for (size_t i = 0; i < pending_count; ++i) rep += "\xEF\xBF\xBD";
      out.push_back(rep);
    }
    pending.clear();
    pending_count = 0;
  };
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (auto& t : tokens) {
    if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && hex(t[3]) >= 0 && hex(t[4]) >= 0) {
      pending.push_back(static_cast<char>(hex(t[3]) * 16 + hex(t[4])));
      ++pending_count;
    } else {
      flush();
      out.push_back(std::move(t));
    }
  }
  flush();
  tokens.swap(out);
}

// CTC: repeated tokens collapse, pad tokens are removed and, with cleanup, the word delimiter
// becomes a space; tokens left empty are dropped.
void apply_ctc(const Decoder& d, std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0 && tokens[i] == tokens[i - 1]) continue;
    std::string t = tokens[i];
    replace_all(t, d.pad_token, "");
    if (d.cleanup) {
      t = clean_up_tokenization(std::move(t));
      replace_all(t, d.word_delimiter_token, " ");
    }
    if (!t.empty()) out.push_back(std::move(t));
  }
  tokens.swap(out);
}

}  // namespace

// Decoders work on a list of token strings.
void apply_decoder(const Decoder& d, std::vector<std::string>& tokens) {
  switch (d.type) {
    case DecoderType::kSequence:
      for (const auto& c : d.children) apply_decoder(c, tokens);
      break;
    case DecoderType::kByteLevel: {
      const ByteLevelTables& bl = byte_level();
      std::string bytes;
      for (const std::string& t : tokens) {
        const size_t mark = bytes.size();
        bool ok = true;
        const char* p = t.data();
        const char* end = p + t.size();
        while (p < end) {
          char32_t cp;
          p += unicode::decode(p, end, cp);
          if (cp < 0x200 && bl.char_to_byte[cp] >= 0) {
            bytes.push_back(static_cast<char>(bl.char_to_byte[cp]));
          } else {
            ok = false;
            break;
          }
        }
        if (!ok) {
          bytes.resize(mark);
          bytes += t;
        }
      }
      tokens.assign(1, unicode::to_valid_utf8(bytes));
      break;
    }
    case DecoderType::kReplace: {
      // The tokens together may grow as much as one text would.
      size_t input_bytes = 0, output_bytes = 0;
      for (const auto& t : tokens) input_bytes += t.size();
      const size_t limit = growth_limit(input_bytes);
      std::string out;
      for (auto& t : tokens) {
        const size_t room = limit - output_bytes;
        const bool fits =
            d.regex ? d.regex->replace_all(t, d.content, out, room) : replace_all(t, d.pattern, d.content, room);
        if (!fits) fail_growth(d.name, input_bytes);
        if (d.regex) t.swap(out);
        output_bytes += t.size();
      }
      break;
    }
    case DecoderType::kWordPiece:
      for (size_t i = 0; i < tokens.size(); ++i) {
        std::string& t = tokens[i];
        if (i > 0) {
          if (!d.prefix.empty() && t.compare(0, d.prefix.size(), d.prefix) == 0)
            t.erase(0, d.prefix.size());
          else
            t = " " + t;
        }
        if (d.cleanup) t = clean_up_tokenization(std::move(t));
      }
      break;
    case DecoderType::kBpe:
      for (size_t i = 0; i < tokens.size(); ++i)
        if (!d.prefix.empty()) replace_all(tokens[i], d.prefix, i + 1 == tokens.size() ? "" : " ");
      break;
    case DecoderType::kCtc: apply_ctc(d, tokens); break;
    case DecoderType::kByteFallback: apply_byte_fallback(tokens); break;
    case DecoderType::kFuse: {
      std::string all;
      for (const auto& t : tokens) all += t;
      tokens.assign(1, std::move(all));
      break;
    }
    case DecoderType::kStrip:
      for (auto& t : tokens) {
        size_t b = 0, e = t.size();
        for (size_t i = 0; i < d.start && e - b >= d.content.size() && t.compare(b, d.content.size(), d.content) == 0;
             ++i)
          b += d.content.size();
        for (size_t i = 0; i < d.stop && e - b >= d.content.size() &&
                           t.compare(e - d.content.size(), d.content.size(), d.content) == 0;
             ++i)
          e -= d.content.size();
        t = t.substr(b, e - b);
      }
      break;
    case DecoderType::kMetaspace:
      for (size_t i = 0; i < tokens.size(); ++i) {
        replace_all(tokens[i], d.replacement, " ");
        if (i == 0 && d.prepend_scheme != PrependScheme::kNever && !tokens[i].empty() && tokens[i][0] == ' ')
          tokens[i].erase(0, 1);
      }
      break;
  }
}

}  // namespace hfstatic::tokenizer

namespace hfstatic {

bool Tokenizer::Impl::cleans_up_spaces() const {
  if (clean_up_tokenization_spaces) return true;
  if (!decoder) return false;
  std::vector<const tokenizer::Decoder*> pending = {&*decoder};
  while (!pending.empty()) {
    const tokenizer::Decoder* d = pending.back();
    pending.pop_back();
    if (d->cleanup) return true;
    for (const auto& c : d->children) pending.push_back(&c);
  }
  return false;
}

}  // namespace hfstatic
