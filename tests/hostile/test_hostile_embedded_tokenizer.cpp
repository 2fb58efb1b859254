// A program whose embedded tokenizer.json is broken: invalid JSON, a number no double holds, a
// normalizer chain that would grow a byte into gigabytes, one that grows a prompt past its bound.
// Loading it (Runner::load, hfstatic run) names the program and the embedded file; so does an
// encode that the tokenizer refuses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "format/program.h"
#include "hostile_support.h"
#include "runner/runner.h"
#include "test_support.h"

namespace hfstatic {
namespace {

using hostile::error_of;
using nlohmann::ordered_json;
using testing::AllOf;
using testing::HasSubstr;
using testing::StartsWith;

RunnerOptions one_thread() {
  RunnerOptions o;
  o.threads = 1;
  return o;
}

class EmbeddedTokenizer : public testing::Test {
 protected:
  test::TempDir dir{"hostile-embedded-tokenizer"};

  static const std::string& program_path() {
    static test::TempDir keep("hostile-embedded-tokenizer-program");
    static const std::string path = [] {
      GraphOptions g;
      g.prefill_len = 8;
      g.max_context = 32;
      return test::export_to(test::cached_checkpoint("tiny", 1), keep.file("tiny.hfs"), g);
    }();
    return path;
  }

  static ordered_json tokenizer() {
    return ordered_json::parse(Program::load(program_path())->embedded_file("tokenizer.json"));
  }

  // The tiny program with `tokenizer_json` embedded in place of its tokenizer.json.
  std::string with_tokenizer(const std::string& name, const std::string& tokenizer_json) {
    auto good = Program::load(program_path());
    ProgramWriter w(good->spec());
    for (const TensorInfo& t : good->container().tensors()) {
      if (t.name == std::string(kEmbeddedFilePrefix) + "tokenizer.json") continue;
      const uint8_t* d = good->container().tensor_data(t);
      if (t.name.rfind(kEmbeddedFilePrefix, 0) == 0)
        w.add_file(t.name.substr(std::string(kEmbeddedFilePrefix).size()), std::string(d, d + t.size));
      else
        w.add_weight_bytes(t.name, t.dtype, t.shape, std::vector<uint8_t>(d, d + t.size));
    }
    w.add_file("tokenizer.json", tokenizer_json);
    const std::string path = dir.file(name);
    w.write(path);
    return path;
  }

  static std::string load_error(const std::string& path) {
    return error_of([&] { Runner::load(path, one_thread()); });
  }
};

ordered_json replace(const std::string& pattern, const std::string& content) {
  return {{"type", "Replace"}, {"pattern", {{"String", pattern}}}, {"content", content}};
}

TEST_F(EmbeddedTokenizer, TheUneditedTokenizerLoads) {
  const std::string path = with_tokenizer("same.hfs", tokenizer().dump());
  EXPECT_NO_THROW(Runner::load(path, one_thread()));
}

TEST_F(EmbeddedTokenizer, InvalidJsonNamesTheProgramTheFileAndTheByte) {
  const std::string path = with_tokenizer("invalid.hfs", "{\"model\": ");
  EXPECT_THAT(load_error(path), StartsWith(path + ": embedded tokenizer.json: invalid JSON at byte 11"));
  auto r = test::run_cli({"run", "-m", path, "-p", "hi", "-n", "1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(path + ": embedded tokenizer.json: invalid JSON at byte 11"));
}

TEST_F(EmbeddedTokenizer, ANumberNoDoubleHoldsNamesTheField) {
  ordered_json j = tokenizer();
  std::string text = j.dump();
  text.insert(1, "\"truncation\": {\"max_length\": 1e400}, ");
  const std::string path = with_tokenizer("huge-number.hfs", text);
  EXPECT_THAT(load_error(path), StartsWith(path + ": embedded tokenizer.json: field 'truncation.max_length': "
                                                  "the number 1e400 is out of range"));
}

TEST_F(EmbeddedTokenizer, AChainThatWouldGrowAByteIntoGigabytesIsRefusedAtLoad) {
  ordered_json j = tokenizer();
  ordered_json list = ordered_json::array();
  for (int i = 0; i < 40; ++i) list.push_back(replace("a", "aa"));
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", list}};
  const std::string path = with_tokenizer("doublings.hfs", j.dump());
  EXPECT_THAT(load_error(path), StartsWith(path + ": embedded tokenizer.json: normalizer.normalizers[20] (Replace): "
                                                  "the normalizers up to this one may make"));
}

TEST_F(EmbeddedTokenizer, APromptItsNormalizerGrowsPastTheBoundNamesTheProgram) {
  ordered_json j = tokenizer();
  j["normalizer"] = replace("a", std::string(1000, 'x'));  // 1000 bytes of one: accepted at load
  const std::string path = with_tokenizer("replace.hfs", j.dump());
  auto runner = Runner::load(path, one_thread());
  GenerationConfig config;
  config.max_new_tokens = 1;
  // 200 bytes become 200,000, past 32 x 200 + 64 KiB: refused before it is tokenized.
  EXPECT_THAT(error_of([&] { runner->generate(std::string(200, 'a'), config); }),
              StartsWith(path + ": embedded tokenizer.json: normalizer (Replace): the output grows past 71936 bytes"));
  EXPECT_EQ(runner->position(), 0);
  EXPECT_NO_THROW(runner->generate("b", config));
  auto r = test::run_cli({"run", "-m", path, "-p", std::string(200, 'a'), "-n", "1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr(path + ": embedded tokenizer.json: normalizer (Replace)"),
                           HasSubstr("the output grows past 71936 bytes")));
}

}  // namespace
}  // namespace hfstatic
