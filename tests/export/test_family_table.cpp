// The family table (export/family_spec.h): the supported list the docs spell is the table's,
// every entry's presets are of its family, and every family has a tiny preset that exports
// into a valid program.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "export/family_spec.h"
#include "export/hf_config.h"
#include "test_support.h"

namespace hfstatic {
namespace {

using nlohmann::json;
using testing::HasSubstr;

std::vector<std::string> table_model_types() {
  std::vector<std::string> out;
  for (const FamilySpec& family : families()) out.push_back(family.model_type);
  return out;
}

// The `quoted` names in a file of the source tree between the first `start` and the next `end`.
std::vector<std::string> names_in_docs(const std::string& file, const std::string& start, const std::string& end) {
  std::ifstream in(std::string(HFSTATIC_SOURCE_DIR) + "/" + file);
  EXPECT_TRUE(in) << file;
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  const size_t from = s.find(start);
  EXPECT_NE(from, std::string::npos) << file << " has no \"" << start << "\"";
  if (from == std::string::npos) return {};
  const size_t to = s.find(end, from + start.size());
  EXPECT_NE(to, std::string::npos) << file << " has no \"" << end << "\" after \"" << start << "\"";
  const std::string span = s.substr(from + start.size(), to - from - start.size());
  std::vector<std::string> out;
  const std::regex quoted("`([^`]+)`");
  for (auto it = std::sregex_iterator(span.begin(), span.end(), quoted); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

TEST(FamilyTable, DocsListExactlyTheTablesFamilies) {
  const std::vector<std::string> want = table_model_types();
  EXPECT_EQ(names_in_docs("README.md", "`export` takes checkpoints of the", " families"), want);
  EXPECT_EQ(names_in_docs("docs/hf_static-v1.md", "the Hugging Face `model_type` (", ")"), want);
  EXPECT_EQ(names_in_docs("src/export/README.md", "Supported families (`model_type`):", "\n\n"), want);
}

TEST(FamilyTable, SupportedListIsTheTableOnce) {
  const std::vector<std::string> types = table_model_types();
  EXPECT_EQ(std::set<std::string>(types.begin(), types.end()).size(), types.size()) << "a model_type twice";
  std::string joined;
  for (const std::string& t : types) joined += (joined.empty() ? "" : ", ") + t;
  EXPECT_EQ(supported_families(), joined);
  for (const FamilySpec& family : families()) EXPECT_EQ(find_family(family.model_type), &family);
  EXPECT_EQ(find_family("gpt2"), nullptr);
  const json config = {{"model_type", "gpt2"}};
  EXPECT_THAT(test::error_of([&] { HfConfig::parse(config, "config.json"); }),
              HasSubstr("'gpt2' is not supported (supported: " + joined + ")"));
}

TEST(FamilyTable, PresetsAreOfTheirFamily) {
  std::set<std::string> names;
  for (const FamilySpec& family : families()) {
    SCOPED_TRACE(family.model_type);
    EXPECT_FALSE(family.architectures.empty());
    EXPECT_FALSE(family.presets.empty());
    for (const CheckpointPreset& preset : family.presets) {
      SCOPED_TRACE(preset.name);
      EXPECT_TRUE(names.insert(preset.name).second) << "a preset name twice";
      const json config = json::parse(preset.config_json);
      EXPECT_EQ(config["model_type"], family.model_type);
      ASSERT_TRUE(config["architectures"].is_array() && config["architectures"].size() == 1);
      EXPECT_THAT(family.architectures, testing::Contains(config["architectures"][0].get<std::string>()));
      EXPECT_EQ(HfConfig::parse(config, preset.name).family, &family);
    }
  }
}

class FamilyTinyPresets : public testing::TestWithParam<std::string> {};

TEST_P(FamilyTinyPresets, ExportAndValidate) {
  const FamilySpec& family = *find_family(GetParam());
  test::TempDir dir("family-table");
  int tiny = 0;
  for (const CheckpointPreset& preset : family.presets) {
    if (preset.name.rfind("tiny", 0) != 0) continue;
    SCOPED_TRACE(preset.name);
    ++tiny;
    GraphOptions g;
    g.prefill_len = 4;
    g.max_context = 64;
    const std::string program =
        test::export_to(test::cached_checkpoint(preset.name), dir.file(preset.name + ".hfs"), g);
    const test::CommandResult r = test::run_cli({"validate", program});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr(": valid "));
  }
  EXPECT_GE(tiny, 1) << "every family needs a tiny-* preset for the tests";
}

INSTANTIATE_TEST_SUITE_P(EveryFamily, FamilyTinyPresets, testing::ValuesIn(table_model_types()),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace hfstatic
