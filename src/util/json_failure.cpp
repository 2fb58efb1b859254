#include "util/json_failure.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "util/error.h"
#include "util/json_limits.h"

namespace hfstatic {
namespace {

using json = nlohmann::json;

// Follows the path to each value; stops at the first error.
class PathTracker {
 public:
  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(json::number_integer_t) { return value(); }
  bool number_unsigned(json::number_unsigned_t) { return value(); }
  bool number_float(json::number_float_t, const json::string_t&) { return value(); }
  bool string(json::string_t&) { return value(); }
  bool binary(json::binary_t&) { return value(); }
  bool key(json::string_t& k) {
    frames_.back().key = k;
    return true;
  }
  bool start_object(std::size_t) { return open(true); }
  bool start_array(std::size_t) { return open(false); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string& token, const nlohmann::detail::exception& e) {
    constexpr int kNumberOverflow = 406;
    if (e.id == kNumberOverflow) failure_.number = token.substr(0, 40);
    failure_.field = path();
    return false;
  }
  const JsonFailure& failure() const { return failure_; }

 private:
  struct Frame {
    bool object;
    std::string key;
    size_t index = 0;
  };
  bool value() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
    return true;
  }
  bool open(bool object) {
    if (frames_.size() >= size_t(kMaxJsonDepth)) return false;
    frames_.push_back({object, {}, 0});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return value();
  }
  std::string path() const {
    std::string out;
    for (const Frame& f : frames_) {
      if (!f.object)
        out += cat("[", f.index, "]");
      else if (f.key.size() <= 80 && f.key.find_first_of(".[]\"") == std::string::npos)
        out += (out.empty() ? "" : ".") + f.key;
      else
        out += cat("[", json(f.key.substr(0, 80)).dump(-1, ' ', false, json::error_handler_t::replace), "]");
    }
    return out;
  }

  std::vector<Frame> frames_;
  JsonFailure failure_;
};

}  // namespace

JsonFailure locate_json_failure(std::string_view text) {
  PathTracker tracker;
  json::sax_parse(text.begin(), text.end(), &tracker, json::input_format_t::json, /*strict=*/true);
  return tracker.failure();
}

std::string json_number_error(std::string_view text, const std::string& origin) {
  const JsonFailure f = locate_json_failure(text);
  if (f.number.empty()) return {};
  return cat(origin, ": ", f.field.empty() ? "" : "field '" + f.field + "': ", "the number ", f.number,
             " is out of range (a double holds at most 1.8e308)");
}

}  // namespace hfstatic
