// Parsing JSON from files and requests with a nesting limit, in time linear in the text.
// nlohmann::json parses deep nesting fine, but copying, comparing or dumping a value recurses
// once per level: a few hundred thousand nested arrays in an untrusted file would overflow the
// stack long after parsing succeeded. (Its callback parser would do, but it is quadratic in the
// number of keys of an object; these drive the SAX interface instead.)
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hfstatic {

// Far deeper than any program spec, config or tokenizer file needs.
inline constexpr int kMaxJsonDepth = 512;

// Like json::parse(text, nullptr, false): a discarded value for invalid JSON, and then, when
// `why` is given, "at byte N: what is wrong" in it. Nesting deeper than max_depth throws Error
// naming `origin`.
nlohmann::json parse_json_limited(std::string_view text, const std::string& origin, int max_depth = kMaxJsonDepth,
                                  std::string* why = nullptr);

// The same for ordered_json (keys in the order of the text), in linear time too. A key given
// twice in an object keeps its first place and takes its last value, as ordered_json::parse does.
nlohmann::ordered_json parse_ordered_json_limited(std::string_view text, const std::string& origin,
                                                  int max_depth = kMaxJsonDepth, std::string* why = nullptr);

}  // namespace hfstatic
