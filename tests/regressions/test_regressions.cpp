// Every file under tests/regressions/<harness>/ goes through the harness it was found with
// (fuzz/fuzz_<harness>.cpp), which lets only hfstatic::Error (or cli::UsageError) out of the
// library and treats anything else as a failure; the program and tokenizer files are also
// checked directly to fail with a clean Error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "format/program.h"
#include "io/io_manager.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/mapped_file.h"

extern "C" int hfstatic_fuzz_program(const uint8_t* data, size_t size);
extern "C" int hfstatic_fuzz_checkpoint(const uint8_t* data, size_t size);
extern "C" int hfstatic_fuzz_tokenizer(const uint8_t* data, size_t size);
extern "C" int hfstatic_fuzz_args(const uint8_t* data, size_t size);
extern "C" int hfstatic_fuzz_quant(const uint8_t* data, size_t size);

namespace hfstatic {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> files_of(const std::string& harness) {
  std::vector<std::string> out;
  fs::path dir = fs::path(HFSTATIC_REGRESSIONS_DIR) / harness;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void replay(const std::string& harness, int (*entry)(const uint8_t*, size_t)) {
  for (const auto& path : files_of(harness)) {
    SCOPED_TRACE(path);
    auto bytes = read_bytes(path);
    EXPECT_NO_THROW(entry(bytes.data(), bytes.size()));
  }
}

TEST(Regressions, Program) {
  replay("program", hfstatic_fuzz_program);
  for (const auto& path : files_of("program")) {
    SCOPED_TRACE(path);
    // Each of these files is invalid: loading it, or its methods, reports an Error naming the file.
    try {
      IOManagerRegistry::instance().load(Program::load(path));
      ADD_FAILURE() << "loaded";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), testing::HasSubstr(fs::path(path).filename().string()));
    }
  }
}

TEST(Regressions, Checkpoint) { replay("checkpoint", hfstatic_fuzz_checkpoint); }

TEST(Regressions, Tokenizer) {
  replay("tokenizer", hfstatic_fuzz_tokenizer);
  const std::string real = read_text_file(std::string(HFSTATIC_SOURCE_DIR) + "/models/demo/tokenizer.json");
  for (const auto& path : files_of("tokenizer")) {
    SCOPED_TRACE(path);
    auto bytes = read_bytes(path);
    ASSERT_FALSE(bytes.empty());
    std::string rest(bytes.begin() + 1, bytes.end());
    if (bytes[0] == 'j') {
      EXPECT_THROW(Tokenizer::from_json(rest, ""), Error);
    } else if (bytes[0] == 'c') {
      nlohmann::json config = {{"chat_template", rest}};
      EXPECT_THROW(apply_chat_template(Tokenizer::from_json(real, config.dump()), {{"user", "hi"}}, true), Error);
    }
  }
}

TEST(Regressions, Args) { replay("args", hfstatic_fuzz_args); }

// A group as wide as the row (576) on each quantized node, its scales [N, 1], at the file's end.
TEST(Regressions, Quant) {
  ASSERT_FALSE(files_of("quant").empty());
  replay("quant", hfstatic_fuzz_quant);
}

}  // namespace
}  // namespace hfstatic
