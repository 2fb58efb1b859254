// transformers 5 configs: the rotary settings as one rope_parameters object (rope_type,
// rope_theta, partial_rotary_factor and the scaling's fields), or one per layer type for Gemma 3,
// with no top-level rope_theta or rope_scaling. Such a config must export the same program as
// the version-4 config it came from; before it was read, the base silently fell back to 10000.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "export/graph_builder.h"
#include "format/program.h"
#include "test_support.h"

namespace hfstatic {
namespace {

using nlohmann::json;
using testing::HasSubstr;

class RopeParameters : public test::CheckpointTest {
 protected:
  RopeParameters() : CheckpointTest("rope-parameters") {}
  // The attributes of every rope node of the prefill method, in order.
  json ropes(const std::string& ckpt) {
    GraphOptions g;
    g.prefill_len = 4;
    g.max_context = 64;
    const auto p = Program::load(test::export_to(ckpt, dir.file(cat("p", count_++, ".hfs")), g));
    json out = json::array();
    for (const NodeSpec& n : p->spec().methods[0].nodes)
      if (n.op == "rope") out.push_back(n.attrs);
    return out;
  }
  // As transformers 5 saves it: rope_theta, partial_rotary_factor and rope_scaling's fields in one
  // rope_parameters object.
  static void to_version5(json& j) {
    json rp = j.value("rope_scaling", json());
    if (!rp.is_object()) rp = {{"rope_type", "default"}};
    if (rp.contains("type")) {
      rp["rope_type"] = rp["type"];
      rp.erase("type");
    }
    for (const char* key : {"rope_theta", "partial_rotary_factor"})
      if (j.contains(key)) {
        rp[key] = j[key];
        j.erase(key);
      }
    j.erase("rope_scaling");
    j["rope_parameters"] = rp;
  }
  int count_ = 0;
};

TEST_F(RopeParameters, OneObjectExportsTheSameProgramAsTheVersion4Fields) {
  // Bases 10000 (tiny), 500000 with llama3 scaling, yarn, 1e6 (qwen3), longrope with partial rotary (phi3).
  for (const char* preset : {"tiny", "tiny-llama3", "tiny-yarn", "tiny-qwen3", "tiny-phi3"}) {
    SCOPED_TRACE(preset);
    const std::string c = checkpoint(preset);
    const json version4 = ropes(c);
    ASSERT_FALSE(version4.empty());
    edit_config(c, to_version5);
    EXPECT_EQ(ropes(c), version4);
  }
}

TEST_F(RopeParameters, TheBaseIsReadFromRopeParameters) {
  const std::string c = checkpoint("tiny");
  edit_config(c, [](json& j) {
    j.erase("rope_theta");
    j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 250000.0}};
  });
  const json r = ropes(c);
  ASSERT_FALSE(r.empty());
  for (const json& a : r) EXPECT_EQ(a["theta"], 250000.0);
}

TEST_F(RopeParameters, Gemma3PerLayerTypeExportsTheSameProgram) {
  // tiny-gemma3: local layers at base 10000, the global one at 1e6; tiny-gemma3-mm adds linear
  // scaling 8 to the global layer (inside text_config).
  for (const char* preset : {"tiny-gemma3", "tiny-gemma3-mm"}) {
    SCOPED_TRACE(preset);
    const std::string c = checkpoint(preset);
    const json version4 = ropes(c);
    ASSERT_GE(version4.size(), 2u);
    EXPECT_NE(version4.front(), version4.back());
    edit_config(c, [](json& config) {
      json& j = config.contains("text_config") ? config["text_config"] : config;
      json full = j.value("rope_scaling", json());
      if (!full.is_object()) full = {{"rope_type", "default"}};
      full["rope_theta"] = j.value("rope_theta", 1000000.0);
      j["rope_parameters"] = {{"full_attention", full},
                              {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}};
      for (const char* key : {"rope_theta", "rope_scaling", "rope_local_base_freq"}) j.erase(key);
    });
    EXPECT_EQ(ropes(c), version4);
  }
}

TEST_F(RopeParameters, ConflictsAndUnsupportedFormsAreErrorsNamingTheFields) {
  const std::string c = checkpoint("tiny");
  auto error_with = [&](const json& rope_parameters) {
    edit_config(c, [&](json& j) { j["rope_parameters"] = rope_parameters; });
    return test::error_of([&] { ropes(c); });
  };
  EXPECT_THAT(error_with("default"), HasSubstr("config field 'rope_parameters' = \"default\" is not an object"));
  EXPECT_THAT(error_with({{"rope_type", "default"}, {"rope_theta", 500000.0}}),
              HasSubstr("config field 'rope_theta' = 10000.0 disagrees with 'rope_parameters.rope_theta' = 500000.0"));
  EXPECT_THAT(error_with({{"rope_type", 3}}),
              HasSubstr("config field 'rope_parameters.rope_type' = 3 is not a string"));
  EXPECT_THAT(error_with({{"rope_type", "linear"}}), HasSubstr("config field 'rope_parameters.factor' is missing"));
  EXPECT_THAT(error_with({{"sliding_attention", {{"rope_type", "default"}}}}),
              HasSubstr("config field 'rope_parameters' has no 'full_attention' entry"));
  EXPECT_THAT(error_with({{"full_attention", {{"rope_type", "default"}}},
                          {"sliding_attention", {{"rope_type", "linear"}, {"factor", 2.0}}}}),
              HasSubstr("'rope_parameters.sliding_attention.rope_type' = 'linear' is not supported"));
  // A llama rotates every layer with one base: another base for sliding layers cannot be kept.
  EXPECT_THAT(error_with({{"full_attention", {{"rope_type", "default"}}},
                          {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 500.0}}}}),
              HasSubstr("model_type 'llama' rotates every layer with one base"));
  EXPECT_THAT(error_with({{"full_attention", {{"rope_type", "default"}}},
                          {"sliding_attention", {{"rope_type", "default"}, {"partial_rotary_factor", 0.5}}}}),
              HasSubstr("one rotary width for every layer is supported"));
}

}  // namespace
}  // namespace hfstatic
