// tokenizer.json loading, encoding, decoding and chat templates. The first byte of the input
// picks what the rest is:
//   'j'  a tokenizer.json, loaded with Tokenizer::from_json, then used to encode and decode
//   't'  text encoded (and decoded back, also streamed) with the demo model's real tokenizer
//   'd'  token ids (2 bytes each) decoded and stream-decoded with that tokenizer
//   'c'  a chat template (tokenizer_config.json's chat_template) rendered over two messages
// Only hfstatic::Error may escape; decode output must be valid UTF-8.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

using namespace hfstatic;

namespace {

const Tokenizer& demo() {
  static const Tokenizer t = Tokenizer::from_file(HFSTATIC_SOURCE_DIR "/models/demo/tokenizer.json");
  return t;
}

bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;
    for (size_t k = 1; k < n; ++k) {
      unsigned char cc = s[i + k];
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += n;
  }
  return true;
}

void check_utf8(const std::string& s) {
  if (!valid_utf8(s)) __builtin_trap();  // decode promises valid UTF-8
}

void round_trip(const Tokenizer& tok, std::string_view text) {
  for (bool specials : {false, true}) {
    std::vector<int32_t> ids = tok.encode(text, specials, specials);
    check_utf8(tok.decode(ids, false));
    check_utf8(tok.decode(ids, true));
    StreamDecoder stream(tok);
    std::string streamed;
    for (int32_t id : ids) streamed += stream.push(id);
    streamed += stream.flush();
    check_utf8(streamed);
  }
}

}  // namespace

// tests/regressions builds this file into a GoogleTest under another name.
#ifndef HFSTATIC_FUZZ_ENTRY
#define HFSTATIC_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

extern "C" int HFSTATIC_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char mode = char(data[0]);
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    switch (mode) {
      case 'j': {
        Tokenizer tok = Tokenizer::from_json(std::string(rest), "");
        round_trip(tok, "Hello, world! 123 \xc3\xa9\xe4\xb8\xad <|endoftext|>  tabs\tand\nlines");
        for (int32_t id = 0; id < tok.vocab_size() && id < 64; ++id) (void)tok.token(id);
        (void)tok.is_special(0);
        break;
      }
      case 't': round_trip(demo(), rest); break;
      case 'd': {
        const Tokenizer& tok = demo();
        std::vector<int32_t> ids;
        for (size_t i = 0; i + 1 < rest.size(); i += 2)
          ids.push_back(int32_t((uint8_t(rest[i]) | (uint8_t(rest[i + 1]) << 8)) % (tok.vocab_size() + 2)));
        check_utf8(tok.decode(ids, false));
        StreamDecoder stream(tok, true);
        std::string streamed;
        for (int32_t id : ids) streamed += stream.push(id);
        streamed += stream.flush();
        check_utf8(streamed);
        break;
      }
      case 'c': {
        static const std::string tokenizer_json = [] {
          std::string path = HFSTATIC_SOURCE_DIR "/models/demo/tokenizer.json";
          FILE* f = std::fopen(path.c_str(), "rb");
          std::string s;
          char buf[65536];
          size_t n;
          while (f && (n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
          if (f) std::fclose(f);
          return s;
        }();
        nlohmann::json config = {{"chat_template", std::string(rest)}, {"bos_token", "<s>"}, {"eos_token", "</s>"}};
        Tokenizer tok =
            Tokenizer::from_json(tokenizer_json, config.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        std::vector<ChatMessage> messages = {
            {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Bye"}};
        (void)apply_chat_template(tok, messages, true);
        break;
      }
      default: break;
    }
  } catch (const Error&) {}
  return 0;
}
