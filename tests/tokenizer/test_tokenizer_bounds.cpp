// What a tokenizer.json may make of a text: normalizer chains and decoder Replaces that would
// grow a byte into gigabytes are refused at load or stop as they pass their bound, and an encode
// with a token limit stops once the limit is passed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "hang_bound.h"
#include "tiny_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace hfstatic {
namespace {

using nlohmann::ordered_json;
using testing::HasSubstr;

std::string with_component(const char* key, const ordered_json& component) {
  ordered_json j = ordered_json::parse(test::tiny_tokenizer_json());
  j[key] = component;
  return j.dump();
}

ordered_json replace(const std::string& pattern, const std::string& content, bool regex = false) {
  return {{"type", "Replace"}, {"pattern", {{regex ? "Regex" : "String", pattern}}}, {"content", content}};
}

ordered_json doublings(int n) {
  ordered_json list = ordered_json::array();
  for (int i = 0; i < n; ++i) list.push_back(replace("h", "hh"));
  return {{"type", "Sequence"}, {"normalizers", list}};
}

std::string load_error(const std::string& tokenizer_json) {
  try {
    Tokenizer::from_json(tokenizer_json, "");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string encode_error(const Tokenizer& tok, const std::string& text) {
  try {
    tok.encode(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TokenizerBounds, ChainsThatWouldGrowATextAbsurdlyAreRefusedAtLoad) {
  // 40 doublings would make 2^40 bytes of "h"; the product passes 2^20 at the 21st.
  EXPECT_THAT(
      load_error(with_component("normalizer", doublings(40))),
      HasSubstr("tokenizer.json: normalizer.normalizers[20] (Replace): the normalizers up to this one may make"));
  EXPECT_THAT(load_error(with_component("normalizer", replace("h", std::string(2000, 'x')))),
              HasSubstr("tokenizer.json: normalizer.content: 2000 bytes; what a normalizer inserts is at most 1024"));
  EXPECT_THAT(load_error(with_component("normalizer", {{"type", "Prepend"}, {"prepend", std::string(5000, 'x')}})),
              HasSubstr("tokenizer.json: normalizer.prepend: 5000 bytes"));
  EXPECT_THAT(load_error(with_component("decoder", replace("h", std::string(1025, 'x')))),
              HasSubstr("tokenizer.json: decoder.content: 1025 bytes"));
  EXPECT_THAT(load_error(with_component("pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "ab"}})),
              HasSubstr("tokenizer.json: pre_tokenizer.replacement: expected one character, not 2 bytes"));
}

TEST(TokenizerBounds, NormalizersStopAsTheirOutputPassesTheBound) {
  // 16 doublings pass the load check (2^16) but make 655,360 bytes of 10: past 32 x 10 + 65,536.
  const Tokenizer tok = Tokenizer::from_json(with_component("normalizer", doublings(16)), "");
  EXPECT_THAT(encode_error(tok, std::string(10, 'h')),
              HasSubstr("tokenizer.json: normalizer.normalizers[12] (Replace): the output grows past 65856 bytes"));
  EXPECT_EQ(encode_error(tok, "h"), "(no error)");  // 65,536 bytes of 1: within 32 + 65,536
  // A regex Replace inserting 1000 bytes per character: 200 characters would make 200,000 bytes.
  const Tokenizer wide =
      Tokenizer::from_json(with_component("normalizer", replace(".", std::string(1000, 'h'), true)), "");
  EXPECT_THAT(encode_error(wide, std::string(200, 'h')),
              HasSubstr("tokenizer.json: normalizer (Replace): the output grows past 71936 bytes"));
  const Tokenizer prepend = Tokenizer::from_json(
      with_component("normalizer",
                     {{"type", "Sequence"},
                      {"normalizers", {doublings(6), {{"type", "Prepend"}, {"prepend", std::string(1000, 'h')}}}}}),
      "");
  EXPECT_NO_THROW(prepend.encode(std::string(1000, 'h')));
}

TEST(TokenizerBounds, RealExpansionsStayWithinTheBound) {
  // NFKC makes 33 bytes of U+FDFA's 3, Replace " " -> U+2581 3 bytes of 1: about 36-fold.
  ordered_json list = ordered_json::array({{{"type", "NFKC"}}, replace(" ", "\u2581")});
  const Tokenizer tok =
      Tokenizer::from_json(with_component("normalizer", {{"type", "Sequence"}, {"normalizers", list}}), "");
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "\xEF\xB7\xBA";
  EXPECT_EQ(encode_error(tok, text), "(no error)");
  EXPECT_EQ(encode_error(tok, std::string(100000, ' ')), "(no error)");
}

TEST(TokenizerBounds, DecoderReplaceStopsAsItsOutputPassesTheBound) {
  const Tokenizer tok = Tokenizer::from_json(with_component("decoder", replace(".", std::string(1000, 'x'), true)), "");
  const std::vector<int32_t> ids(200, 11);  // "hello" 200 times: 1,000 bytes, 1,000,000 once replaced
  try {
    tok.decode(ids);
    ADD_FAILURE() << "decoded";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("tokenizer.json: decoder (Replace): the output grows past 97536 bytes"));
  }
  EXPECT_EQ(tok.decode({11}).size(), 5000u);
}

TEST(TokenizerBounds, EncodeStopsPastItsTokenLimit) {
  const Tokenizer tok = Tokenizer::from_json(test::tiny_tokenizer_json(), "");
  std::string text;
  for (int i = 0; i < 100; ++i) text += "hello world";
  const size_t all = tok.encode(text).size();  // bos + 100 x (hello Ġw o r l d) - ...
  EXPECT_EQ(tok.encode(text, true, true, all).size(), all);
  try {
    tok.encode(text, true, true, all - 1);
    ADD_FAILURE() << "encoded";
  } catch (const TokenLimitError& e) {
    EXPECT_EQ(std::string(e.what()), "more than " + std::to_string(all - 1) + " tokens");
    EXPECT_EQ(e.max_tokens(), all - 1);
  }
  // One piece of 8 MiB of spaces stands for at least 1.6 million tokens (5 bytes a token at
  // most): refused before the model sees it.
  const std::string spaces(size_t{8} << 20, ' ');
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(tok.encode(spaces, false, true, 1000), TokenLimitError);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, test::hang_bound(5));
  EXPECT_THROW(tok.encode("<|end|><|end|>", false, true, 1), TokenLimitError);
}

TEST(TokenizerBounds, NumbersNoDoubleHoldsNameTheirField) {
  std::string text = test::tiny_tokenizer_json();
  text.insert(text.find("\"model\": {"), "\"truncation\": {\"max_length\": 1e400}, ");
  EXPECT_THAT(load_error(text),
              HasSubstr("tokenizer.json: field 'truncation.max_length': the number 1e400 is out of range"));
  EXPECT_THAT(load_error("{\"model\": "), HasSubstr("tokenizer.json: invalid JSON at byte"));
}

}  // namespace
}  // namespace hfstatic
