// Parsing JSON from files with a nesting limit. nlohmann::json parses deep nesting fine, but
// copying, comparing or dumping a value recurses once per level: a few hundred thousand nested
// arrays in an untrusted file would overflow the stack long after parsing succeeded.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "util/error.h"

namespace hfstatic {

// Far deeper than any program spec, config or tokenizer file needs.
inline constexpr int kMaxJsonDepth = 512;

// Like json::parse(text, nullptr, false): a discarded value for invalid JSON. Nesting deeper
// than max_depth throws Error naming `origin`.
inline nlohmann::json parse_json_limited(std::string_view text, const std::string& origin, int max_depth = kMaxJsonDepth) {
  nlohmann::json::parser_callback_t limit = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > max_depth) fail(origin, ": JSON nests deeper than ", max_depth, " levels");
    return true;
  };
  return nlohmann::json::parse(text.begin(), text.end(), limit, /*allow_exceptions=*/false);
}

}  // namespace hfstatic
