#include "util/json_limits.h"

#include <map>
#include <vector>

#include "util/error.h"

namespace hfstatic {

namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

// "at byte N (line L, column C): what is wrong", never quoting more than a short token.
std::string describe_parse_error(std::size_t position, const nlohmann::detail::exception& e) {
  // e.what() reads "[json.exception.parse_error.101] parse error at line 1, column 5: ...".
  std::string what = e.what();
  const size_t at = what.find("at line ");
  std::string error = cat("at byte ", position, at == std::string::npos ? ": " + what : " (" + what.substr(at + 3));
  if (const size_t colon = error.find(": ", error.find('(')); at != std::string::npos && colon != std::string::npos)
    error.replace(colon, 2, "): ");
  // The message quotes the token last read, which can be most of the text: never echo that.
  constexpr size_t kMaxMessage = 200;
  if (error.size() > kMaxMessage) {
    size_t cut = kMaxMessage;
    while (cut > 0 && (uint8_t(error[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
    error = error.substr(0, cut) + "...'";
  }
  return error;
}

// Fails past max_depth levels of nesting.
class DepthCount {
 public:
  DepthCount(const std::string& origin, int max_depth) : origin_(origin), max_depth_(max_depth) {}
  void enter() {
    if (++depth_ > max_depth_) fail(origin_, ": JSON nests deeper than ", max_depth_, " levels");
  }
  void leave() { --depth_; }

 private:
  const std::string& origin_;
  int max_depth_;
  int depth_ = 0;
};

// The DOM builder of json::parse, with a depth count in front of it.
class DepthLimitedBuilder {
 public:
  DepthLimitedBuilder(json& result, const std::string& origin, int max_depth)
      : dom_(result, /*allow_exceptions=*/false), depth_(origin, max_depth) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) { return dom_.number_float(v, s); }
  bool string(json::string_t& v) { return dom_.string(v); }
  bool binary(json::binary_t& v) { return dom_.binary(v); }
  bool key(json::string_t& v) { return dom_.key(v); }
  bool start_object(std::size_t n) { return depth_.enter(), dom_.start_object(n); }
  bool end_object() { return depth_.leave(), dom_.end_object(); }
  bool start_array(std::size_t n) { return depth_.enter(), dom_.start_array(n); }
  bool end_array() { return depth_.leave(), dom_.end_array(); }
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& e) {
    error_ = describe_parse_error(position, e);
    return dom_.parse_error(position, token, e);
  }
  const std::string& error() const { return error_; }

 private:
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  DepthCount depth_;
  std::string error_;
};

// Builds an ordered_json without its own builder's linear search per key: each open object keeps
// a sorted index of its keys (sorted, not hashed: keys are chosen by whoever sent the text).
class OrderedBuilder {
 public:
  OrderedBuilder(ordered_json& result, const std::string& origin, int max_depth)
      : result_(result), depth_(origin, max_depth) {}

  bool null() { return put(nullptr), true; }
  bool boolean(bool v) { return put(v), true; }
  bool number_integer(json::number_integer_t v) { return put(v), true; }
  bool number_unsigned(json::number_unsigned_t v) { return put(v), true; }
  bool number_float(json::number_float_t v, const json::string_t&) { return put(v), true; }
  bool string(json::string_t& v) { return put(std::move(v)), true; }
  bool binary(json::binary_t& v) { return put(ordered_json::binary(std::move(v))), true; }
  bool key(json::string_t& k) {
    Open& top = open_.back();
    auto& members = static_cast<ordered_json::object_t::Container&>(top.value->get_ref<ordered_json::object_t&>());
    // A key given twice keeps its first place and takes its last value, as ordered_json::parse does.
    const auto [at, added] = top.keys.try_emplace(k, members.size());
    if (added) members.emplace_back(std::move(k), nullptr);
    member_ = &members[at->second].second;
    return true;
  }
  bool start_object(std::size_t) {
    depth_.enter();
    open_.push_back({put(ordered_json::object()), {}});
    return true;
  }
  bool start_array(std::size_t) {
    depth_.enter();
    open_.push_back({put(ordered_json::array()), {}});
    return true;
  }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    error_ = describe_parse_error(position, e);
    return false;
  }
  const std::string& error() const { return error_; }

 private:
  struct Open {
    ordered_json* value;
    std::map<std::string, size_t> keys;  // objects: each key's index among the members
  };

  // Places a value where the text has it: the root, the next element of an array, or the
  // member whose key came last. No container grows while a pointer into it is held.
  ordered_json* put(ordered_json&& v) {
    if (open_.empty()) {
      result_ = std::move(v);
      return &result_;
    }
    ordered_json& top = *open_.back().value;
    if (top.is_array()) {
      auto& elements = top.get_ref<ordered_json::array_t&>();
      elements.push_back(std::move(v));
      return &elements.back();
    }
    *member_ = std::move(v);
    return member_;
  }
  bool close() {
    depth_.leave();
    open_.pop_back();
    return true;
  }

  ordered_json& result_;
  DepthCount depth_;
  std::vector<Open> open_;
  ordered_json* member_ = nullptr;
  std::string error_;
};

}  // namespace

json parse_json_limited(std::string_view text, const std::string& origin, int max_depth, std::string* why) {
  json result;
  DepthLimitedBuilder builder(result, origin, max_depth);
  const bool ok = json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json, /*strict=*/true);
  if (!ok || !builder.error().empty()) {
    if (why) *why = builder.error().empty() ? "not valid JSON" : builder.error();
    return json(json::value_t::discarded);
  }
  return result;
}

ordered_json parse_ordered_json_limited(std::string_view text, const std::string& origin, int max_depth,
                                        std::string* why) {
  ordered_json result;
  OrderedBuilder builder(result, origin, max_depth);
  const bool ok =
      ordered_json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json, /*strict=*/true);
  if (!ok || !builder.error().empty()) {
    if (why) *why = builder.error().empty() ? "not valid JSON" : builder.error();
    return ordered_json(ordered_json::value_t::discarded);
  }
  return result;
}

}  // namespace hfstatic
