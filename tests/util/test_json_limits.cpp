// JSON parsing with a nesting limit: the plain and the ordered variant.
#include <gtest/gtest.h>

#include <string>

#include "util/error.h"
#include "util/json_limits.h"

namespace hfstatic {
namespace {

TEST(JsonLimits, OrderedKeepsTheTextsKeyOrder) {
  const auto j = parse_ordered_json_limited(R"({"z": 1, "a": [true, null, {"y": 2.5, "b": "s"}], "m": {}})", "t");
  EXPECT_EQ(j.dump(), R"({"z":1,"a":[true,null,{"y":2.5,"b":"s"}],"m":{}})");
  EXPECT_EQ(parse_ordered_json_limited("7", "t"), 7);
  EXPECT_EQ(parse_ordered_json_limited("[]", "t").dump(), "[]");
}

TEST(JsonLimits, OrderedRepeatedKeyKeepsItsFirstPlaceAndLastValue) {
  const auto j = parse_ordered_json_limited(R"({"a": 1, "b": {"c": 1, "c": [2]}, "a": {"d": 3}})", "t");
  EXPECT_EQ(j.dump(), R"({"a":{"d":3},"b":{"c":[2]}})");
  // The same as the library's own parse, and as the plain variant's values.
  EXPECT_EQ(j.dump(), nlohmann::ordered_json::parse(R"({"a": 1, "b": {"c": 1, "c": [2]}, "a": {"d": 3}})").dump());
  EXPECT_EQ(parse_json_limited(R"({"a": 1, "a": 2})", "t")["a"], 2);
}

TEST(JsonLimits, BothRefuseNestingPastTheLimit) {
  const std::string deep = std::string(65, '[') + std::string(65, ']');
  EXPECT_TRUE(parse_ordered_json_limited(deep.substr(1, 128), "t", 64).is_array());
  EXPECT_TRUE(parse_json_limited(deep.substr(1, 128), "t", 64).is_array());
  for (auto parse : {+[](const std::string& s) { parse_ordered_json_limited(s, "the field", 64); },
                     +[](const std::string& s) { parse_json_limited(s, "the field", 64); }}) {
    try {
      parse(deep);
      ADD_FAILURE() << "65 levels accepted";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "the field: JSON nests deeper than 64 levels");
    }
  }
}

TEST(JsonLimits, OrderedInvalidTextIsDiscardedWithWhere) {
  std::string why;
  EXPECT_TRUE(parse_ordered_json_limited(R"({"a": })", "t", 64, &why).is_discarded());
  EXPECT_EQ(why.rfind("at byte 7 (line 1, column 7): ", 0), 0u) << why;
  EXPECT_TRUE(parse_ordered_json_limited(R"({"a": 1} x)", "t").is_discarded());
}

}  // namespace
}  // namespace hfstatic
