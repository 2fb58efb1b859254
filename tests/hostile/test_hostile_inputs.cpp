// Named hostile inputs: each is rejected with a clear hfstatic::Error (no crash, no partial
// output), or, where the input is legal (non-UTF-8 prompt text), handled with defined behaviour.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "export/hf_config.h"
#include "format/program.h"
#include "hostile_support.h"
#include "runner/runner.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"
#include "util/mapped_file.h"

namespace hfstatic {
namespace {

using hostile::container;
using hostile::error_of;
using hostile::nested_arrays;
using nlohmann::json;
using testing::AllOf;
using testing::HasSubstr;

std::string tensor(const char* dtype, const json& shape, uint64_t begin, uint64_t end) {
  return json{{"dtype", dtype}, {"shape", shape}, {"data_offsets", {begin, end}}}.dump();
}

std::string parse_error(const std::vector<uint8_t>& bytes) {
  return error_of([&] { SafetensorsView::parse(bytes.data(), bytes.size(), "hostile.safetensors"); });
}

class HostileInputs : public testing::Test {
 protected:
  test::TempDir dir_{"hostile"};

  std::string load_error(const std::vector<uint8_t>& bytes) {
    std::string path = dir_.file("bad.hfs");
    hostile::write_bytes(path, bytes);
    return error_of([&] { Program::load(path); });
  }
};

TEST_F(HostileInputs, HeaderLengthPastTheEnd) {
  auto bytes = container("{}", {}, uint64_t(1) << 20);
  EXPECT_THAT(parse_error(bytes), HasSubstr("runs past the end of the file"));
  EXPECT_THAT(load_error(bytes), HasSubstr("runs past the end of the file"));
  // A length whose 8 + length wraps around 64 bits.
  EXPECT_THAT(parse_error(container("{}", {}, ~uint64_t(0) - 3)), HasSubstr("runs past the end"));
  // Shorter than the length field itself.
  std::vector<uint8_t> tiny = {1, 0, 0};
  EXPECT_THAT(parse_error(tiny), HasSubstr("too short"));
}

TEST_F(HostileInputs, TensorOffsetsOutOfRange) {
  std::vector<uint8_t> data(16);
  EXPECT_THAT(parse_error(container("{\"t\":" + tensor("F32", {8}, 0, 32) + "}", data)),
              HasSubstr("runs past the end of the data"));
  EXPECT_THAT(parse_error(container("{\"t\":" + tensor("F32", {2}, 8, 0) + "}", data)),
              HasSubstr("ends before it begins"));
  EXPECT_THAT(parse_error(container("{\"t\":" + tensor("F32", {2}, ~uint64_t(0) - 7, ~uint64_t(0)) + "}", data)),
              HasSubstr("runs past the end of the data"));
  EXPECT_THAT(parse_error(container(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", data)),
              HasSubstr("not a pair of non-negative integers"));
}

TEST_F(HostileInputs, OverlappingTensors) {
  std::vector<uint8_t> data(16);
  std::string header = "{\"a\":" + tensor("F32", {3}, 0, 12) + ",\"b\":" + tensor("F32", {2}, 8, 16) + "}";
  EXPECT_THAT(parse_error(container(header, data)), HasSubstr("overlaps"));
  // The same bytes named twice.
  header = "{\"a\":" + tensor("F32", {2}, 0, 8) + ",\"b\":" + tensor("F32", {2}, 0, 8) + "}";
  EXPECT_THAT(parse_error(container(header, data)), HasSubstr("overlaps"));
}

TEST_F(HostileInputs, ShapeProductsThatOverflow) {
  const int64_t big = int64_t(1) << 40;
  EXPECT_THAT(parse_error(container("{\"t\":" + tensor("F32", {big, big}, 0, 0) + "}")), HasSubstr("overflows"));
  EXPECT_THAT(parse_error(container("{\"t\":" + tensor("F32", {big, 1 << 22}, 0, 0) + "}")), HasSubstr("overflows"));
  // The element count fits but the byte count does not.
  EXPECT_THAT(parse_error(container("{\"t\":" + tensor("I64", {big, 1 << 21}, 0, 0) + "}")), HasSubstr("overflows"));
}

TEST_F(HostileInputs, ZeroAndAbsurdDimensions) {
  // A zero dimension is a legal empty tensor: it takes no bytes, overlaps nothing.
  std::vector<uint8_t> data(8);
  std::string header = "{\"e\":" + tensor("F32", {0, 4}, 0, 0) + ",\"f\":" + tensor("F32", {2}, 0, 8) + "}";
  auto ok = container(header, data);
  auto view = SafetensorsView::parse(ok.data(), ok.size(), "empty-tensor");
  EXPECT_EQ(view.find("e")->size, 0u);
  EXPECT_THAT(parse_error(container("{\"t\":" + tensor("F32", {int64_t(1) << 41}, 0, 0) + "}")),
              HasSubstr("outside [0, 2^40]"));
  EXPECT_THAT(parse_error(container(R"({"t":{"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,0]}})")),
              HasSubstr("outside [0, 2^40]"));
  EXPECT_THAT(parse_error(container(R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})")),
              HasSubstr("outside [0, 2^40]"));
  EXPECT_THAT(parse_error(container(R"({"t":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})")),
              HasSubstr("rank 9"));
}

TEST_F(HostileInputs, DeeplyNestedHeaderJson) {
  const std::string deep = nested_arrays(100000);
  // The header is rejected while parsing, before anything walks the nested value.
  const auto too_deep = AllOf(HasSubstr("hostile.safetensors: header"), HasSubstr("nests deeper than 512 levels"));
  EXPECT_THAT(parse_error(container("{\"t\":" + deep + "}")), too_deep);
  EXPECT_THAT(parse_error(container("{\"t\":{\"dtype\":\"F32\",\"shape\":" + deep + ",\"data_offsets\":[0,0]}}")),
              too_deep);
  EXPECT_THAT(parse_error(container(deep)), too_deep);
  // Nesting within the limit still reaches the field checks.
  EXPECT_THAT(parse_error(container("{\"t\":" + nested_arrays(100) + "}")), HasSubstr("not an object"));
  // Inside the program spec (a JSON string in __metadata__), where the spec is copied.
  json spec = {{"format", "hfstatic-program"}, {"format_version", 1}, {"methods", json::array()}};
  std::string spec_text = spec.dump();
  spec_text.insert(spec_text.size() - 1, ",\"metadata\":{\"deep\":" + deep + "}");
  json header = {{"__metadata__", {{"hfstatic.program", spec_text}}}};
  EXPECT_THAT(load_error(container(header.dump())), HasSubstr("nests deeper than"));
}

TEST_F(HostileInputs, HugeHeader) {
  // 50 MB of header: accepted up to the limit and parsed once, then rejected for what it holds.
  json header = {{"__metadata__", {{"filler", std::string(50u << 20, 'x')}}}};
  EXPECT_THAT(load_error(container(header.dump())), HasSubstr("not an hfstatic program"));
  // Past the 100 MiB limit: refused before parsing.
  std::vector<uint8_t> bytes;
  hostile::put_u64(bytes, (100u << 20) + 8);
  bytes.resize(8 + (100u << 20) + 8, ' ');
  EXPECT_THAT(parse_error(bytes), HasSubstr("exceeds the limit"));
}

TEST_F(HostileInputs, DeeplyNestedAndHugeTokenizerJson) {
  const std::string deep = nested_arrays(100000);
  EXPECT_THAT(error_of([&] { Tokenizer::from_json(deep, ""); }), HasSubstr("tokenizer.json"));
  EXPECT_THAT(error_of([&] { Tokenizer::from_json("{\"added_tokens\":" + deep + ",\"model\":{}}", ""); }),
              HasSubstr("nests deeper than"));
  std::string real = read_text_file(std::string(HFSTATIC_SOURCE_DIR) + "/models/demo/tokenizer.json");
  EXPECT_THAT(error_of([&] { Tokenizer::from_json(real, "{\"x\":" + deep + "}"); }),
              HasSubstr("tokenizer_config.json"));
  // Chat templates nest too: parentheses, blocks, long operator chains.
  auto template_error = [&](const std::string& source) {
    return error_of([&] {
      Tokenizer t = Tokenizer::from_json(real, json{{"chat_template", source}}.dump());
      apply_chat_template(t, {{"user", "hi"}}, true);
    });
  };
  EXPECT_THAT(template_error("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}"),
              HasSubstr("nest deeper"));
  std::string chain = "{{ 1";
  for (int i = 0; i < 100000; ++i) chain += " + 1";
  EXPECT_THAT(template_error(chain + " }}"), HasSubstr("nest deeper"));
  std::string blocks;
  for (int i = 0; i < 20000; ++i) blocks += "{% if true %}";
  for (int i = 0; i < 20000; ++i) blocks += "{% endif %}";
  EXPECT_THAT(template_error(blocks), HasSubstr("nest deeper"));
  EXPECT_THAT(template_error("{{ 99999999999999999999999 }}"), HasSubstr("out of range"));
  // Huge but flat: a 20 MB token string in the vocabulary loads.
  json tok = json::parse(real);
  tok["added_tokens"].push_back({{"id", 100000},
                                 {"content", std::string(20u << 20, 'a')},
                                 {"special", true},
                                 {"single_word", false},
                                 {"lstrip", false},
                                 {"rstrip", false},
                                 {"normalized", false}});
  try {
    Tokenizer::from_json(tok.dump(), "");
  } catch (const Error&) {
    // Rejecting it is fine too; only a crash is not.
  }
}

TEST_F(HostileInputs, CorruptConfigValues) {
  json config = json::parse(read_text_file(std::string(HFSTATIC_SOURCE_DIR) + "/models/demo/config.json"));
  for (const char* key :
       {"hidden_size", "num_hidden_layers", "vocab_size", "num_attention_heads", "intermediate_size"}) {
    for (json bad : {json(0), json(-1), json(int64_t(1) << 62), json("12"), json(1.5), json(nested_arrays(1000))}) {
      json c = config;
      c[key] = bad;
      EXPECT_THAT(error_of([&] { expected_tensors(HfConfig::parse(c, "config.json")); }), HasSubstr(key))
          << key << " = " << bad;
    }
  }
}

// Prompts against a tiny program with a byte-level tokenizer and a 32-token context.
class HostilePrompts : public testing::Test {
 protected:
  void SetUp() override {
    GraphOptions g;
    g.prefill_len = 8;
    g.max_context = 32;
    path_ = test::export_to(test::cached_checkpoint("tiny", 5), dir_.file("p.hfs"), g);
    RunnerOptions o;
    o.threads = 1;
    runner_ = Runner::load(path_, o);
  }
  GenerationConfig greedy(int64_t n) {
    GenerationConfig c;
    c.max_new_tokens = n;
    c.ignore_eos = true;
    return c;
  }
  test::TempDir dir_{"hostile-prompts"};
  std::string path_;
  std::unique_ptr<Runner> runner_;
};

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((uint8_t(s[i + k]) & 0xc0) != 0x80) return false;
    i += n;
  }
  return true;
}

TEST_F(HostilePrompts, NonUtf8PromptBytes) {
  // Lone continuation and lead bytes, a truncated sequence, a surrogate, an out-of-range code
  // point, an overlong form and a NUL (each U+FFFD is 3 tokens of the byte-level vocabulary).
  const std::string bytes = std::string("a\xff\xc3(\xed\xa0\x80\0z", 10);
  const std::string more = std::string("\xf4\x90\x80\x80\xc0\xaf", 6);
  EXPECT_TRUE(valid_utf8(runner_->tokenizer()->decode(runner_->tokenizer()->encode(more, false))));
  const Tokenizer& tok = *runner_->tokenizer();
  // Defined behaviour: each maximal ill-formed subsequence reads as U+FFFD.
  std::vector<int32_t> ids = tok.encode(bytes, false);
  ASSERT_FALSE(ids.empty());
  std::string round = tok.decode(ids);
  EXPECT_TRUE(valid_utf8(round));
  EXPECT_NE(round.find("\xef\xbf\xbd"), std::string::npos);
  EXPECT_EQ(tok.encode(round, false), ids);
  std::vector<std::string> pieces;
  GenerationResult r = runner_->generate(bytes, greedy(4), [&](const std::string& p) { pieces.push_back(p); });
  EXPECT_EQ(r.tokens.size(), 4u);
  EXPECT_TRUE(valid_utf8(r.text));
  for (const auto& p : pieces) EXPECT_TRUE(valid_utf8(p));
}

TEST_F(HostilePrompts, PromptLongerThanTheContextIsAnErrorBeforeAnythingRuns) {
  std::vector<int64_t> prompt(33, 7);
  int calls = 0;
  EXPECT_THAT(error_of([&] { runner_->generate_tokens(prompt, greedy(1), [&](int64_t) { return ++calls, true; }); }),
              HasSubstr("32"));
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(runner_->position(), 0);
  EXPECT_TRUE(runner_->context().empty());
  std::string text(200, 'x');  // byte-level: 200 tokens
  std::vector<std::string> pieces;
  EXPECT_THAT(error_of([&] { runner_->generate(text, greedy(1), [&](const std::string& p) { pieces.push_back(p); }); }),
              HasSubstr("32"));
  EXPECT_TRUE(pieces.empty());
  // Nothing was disturbed: the same runner still works.
  std::vector<int64_t> ok = {1, 2, 3};
  EXPECT_EQ(runner_->generate_tokens(ok, greedy(2)).tokens.size(), 2u);
}

TEST_F(HostilePrompts, MaxNewTokensLargerThanTheContextIsAnError) {
  std::vector<int64_t> prompt = {1, 2, 3};
  int calls = 0;
  EXPECT_THAT(error_of([&] { runner_->generate_tokens(prompt, greedy(33), [&](int64_t) { return ++calls, true; }); }),
              HasSubstr("max_new_tokens 33 exceeds the model's max_context 32"));
  EXPECT_THAT(error_of([&] { runner_->generate_tokens(prompt, greedy(int64_t(1) << 62)); }),
              HasSubstr("max_new_tokens"));
  EXPECT_THAT(error_of([&] { runner_->generate_tokens(prompt, greedy(-1)); }), HasSubstr("negative"));
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(runner_->position(), 0);
  // Out-of-vocabulary ids are refused before anything runs, too.
  std::vector<int64_t> bad = {1, -5};
  EXPECT_THAT(error_of([&] { runner_->generate_tokens(bad, greedy(1)); }), HasSubstr("outside the vocabulary"));
  bad = {1, int64_t(1) << 40};
  EXPECT_THAT(error_of([&] { runner_->generate_tokens(bad, greedy(1)); }), HasSubstr("outside the vocabulary"));
  EXPECT_EQ(runner_->position(), 0);
}

}  // namespace
}  // namespace hfstatic
