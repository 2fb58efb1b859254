// Typed, range-checked reads of config.json fields; each failure names the field and value.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "util/error.h"

namespace hfstatic {

// A value as an error quotes it: its JSON, cut after about 200 bytes.
inline std::string quote_json(const nlohmann::json& v) {
  constexpr size_t kMaxQuote = 200;
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() <= kMaxQuote) return s;
  size_t cut = kMaxQuote;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  return cat(s.substr(0, cut), "... (", s.size(), " bytes)");
}

struct ConfigReader {
  const nlohmann::json& j;
  const std::string& origin;
  std::string prefix = {};  // "rope_scaling." for a nested object

  bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }

  int64_t integer(const char* key, int64_t min, int64_t max, std::optional<int64_t> fallback = std::nullopt) const {
    if (!has(key)) {
      if (fallback) return *fallback;
      fail(origin, ": config field '", prefix, key, "' is missing");
    }
    const nlohmann::json& v = j[key];
    if (!v.is_number_integer())
      fail(origin, ": config field '", prefix, key, "' = ", quote_json(v), " is not an integer");
    // Past int64_t the value is unsigned: as an int64_t it would read as negative.
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(max))
      fail(origin, ": config field '", prefix, key, "' = ", v.get<uint64_t>(), " is outside [", min, ", ", max, "]");
    int64_t x = v.get<int64_t>();
    if (x < min || x > max)
      fail(origin, ": config field '", prefix, key, "' = ", x, " is outside [", min, ", ", max, "]");
    return x;
  }

  double number(const char* key, double min, double max, double fallback) const {
    return has(key) ? required_number(key, min, max) : fallback;
  }

  std::optional<double> optional_number(const char* key, double min, double max) const {
    if (!has(key)) return std::nullopt;
    return required_number(key, min, max);
  }

  double required_number(const char* key, double min, double max) const {
    if (!has(key)) fail(origin, ": config field '", prefix, key, "' is missing");
    const nlohmann::json& v = j[key];
    if (!v.is_number()) fail(origin, ": config field '", prefix, key, "' = ", quote_json(v), " is not a number");
    double x = v.get<double>();
    if (!(x >= min && x <= max))
      fail(origin, ": config field '", prefix, key, "' = ", x, " is outside [", min, ", ", max, "]");
    return x;
  }

  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_boolean())
      fail(origin, ": config field '", prefix, key, "' = ", quote_json(j[key]), " is not a boolean");
    return j[key].get<bool>();
  }

  // A list of exactly `length` numbers in [min, max].
  std::vector<double> numbers(const char* key, size_t length, double min, double max) const {
    if (!has(key) || !j[key].is_array()) fail(origin, ": config field '", prefix, key, "' is missing or not a list");
    const nlohmann::json& v = j[key];
    if (v.size() != length)
      fail(origin, ": config field '", prefix, key, "' has ", v.size(), " values where ", length, " are needed");
    std::vector<double> out;
    for (const auto& e : v) {
      if (!e.is_number() || !(e.get<double>() >= min && e.get<double>() <= max))
        fail(origin, ": config field '", prefix, key, "' holds ", quote_json(e), ", not a number in [", min, ", ", max,
             "]");
      out.push_back(e.get<double>());
    }
    return out;
  }
};

}  // namespace hfstatic
