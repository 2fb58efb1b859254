#include "util/json_limits.h"

#include "util/error.h"

namespace hfstatic {

namespace {

using json = nlohmann::json;

// The DOM builder of json::parse, with a depth count in front of it.
class DepthLimitedBuilder {
 public:
  DepthLimitedBuilder(json& result, const std::string& origin, int max_depth)
      : dom_(result, /*allow_exceptions=*/false), origin_(origin), max_depth_(max_depth) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) { return dom_.number_float(v, s); }
  bool string(json::string_t& v) { return dom_.string(v); }
  bool binary(json::binary_t& v) { return dom_.binary(v); }
  bool key(json::string_t& v) { return dom_.key(v); }
  bool start_object(std::size_t n) { return enter() && dom_.start_object(n); }
  bool end_object() { return leave() && dom_.end_object(); }
  bool start_array(std::size_t n) { return enter() && dom_.start_array(n); }
  bool end_array() { return leave() && dom_.end_array(); }
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line 1, column 5: ...".
    std::string what = e.what();
    const size_t at = what.find("at line ");
    error_ = cat("at byte ", position, at == std::string::npos ? ": " + what : " (" + what.substr(at + 3));
    if (const size_t colon = error_.find(": ", error_.find('(')); at != std::string::npos && colon != std::string::npos)
      error_.replace(colon, 2, "): ");
    // The message quotes the token last read, which can be most of the text: never echo that.
    constexpr size_t kMaxMessage = 200;
    if (error_.size() > kMaxMessage) {
      size_t cut = kMaxMessage;
      while (cut > 0 && (uint8_t(error_[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
      error_ = error_.substr(0, cut) + "...'";
    }
    return dom_.parse_error(position, token, e);
  }
  const std::string& error() const { return error_; }

 private:
  bool enter() {
    if (++depth_ > max_depth_) fail(origin_, ": JSON nests deeper than ", max_depth_, " levels");
    return true;
  }
  bool leave() {
    --depth_;
    return true;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  const std::string& origin_;
  int max_depth_;
  int depth_ = 0;
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

}  // namespace hfstatic
