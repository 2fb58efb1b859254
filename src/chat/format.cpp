// Python's string formatting: str.format's replacement fields and printf-style `%`.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "chat/budget.h"
#include "chat/builtins.h"
#include "util/error.h"

namespace hfstatic::chat {
namespace {

// One conversion's options, shared by both syntaxes.
struct Spec {
  char fill = ' ';
  char align = 0;  // '<', '>', '^', '=' or 0 for the type's default
  char sign = '-';
  bool alternate = false;
  int64_t width = 0;
  int64_t precision = -1;
  char type = 0;
};

int64_t read_number(std::string_view s, size_t& i, const char* what) {
  int64_t n = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    n = n * 10 + (s[i++] - '0');
    if (n > static_cast<int64_t>(kMaxStringBytes))
      render_error(cat("format: ", what, " exceeds the ", kMaxStringBytes >> 20, " MiB string limit"));
  }
  return n;
}

// '%c' of a code point, UTF-8 encoded; out of range as in Python (OverflowError), and a surrogate,
// which Python makes but cannot encode, an error too.
std::string character(int64_t n) {
  if (n < 0 || n > 0x10FFFF) render_error(cat("format: %c arg not in range(0x110000): ", n));
  if (n >= 0xD800 && n <= 0xDFFF) render_error(cat("format: %c of the surrogate ", n, " is not a character"));
  const auto cp = static_cast<uint32_t>(n);
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

std::string format_number(const Value& v, const Spec& spec) {
  const char type = spec.type;
  if (type == 'd' || type == 'i' || type == 'x' || type == 'X' || type == 'o' || type == 'c') {
    if (!v.is_number() && !v.is_bool()) render_error(cat("format: '", type, "' needs a number"));
    const int64_t n = v.integer("format");
    if (type == 'c') return character(n);
    const char* conv = type == 'x' ? "%llx" : type == 'X' ? "%llX" : type == 'o' ? "%llo" : "%lld";
    char buf[32];
    const unsigned long long magnitude = n < 0 ? 0ull - static_cast<unsigned long long>(n) : n;
    std::snprintf(buf, sizeof buf, conv, type == 'd' || type == 'i' ? static_cast<long long>(n) : magnitude);
    std::string digits = buf;
    if (type != 'd' && type != 'i' && n < 0) digits = "-" + digits;
    if (spec.alternate && (type == 'x' || type == 'X' || type == 'o')) {
      const size_t at = digits[0] == '-' ? 1 : 0;
      digits.insert(at, type == 'o' ? "0o" : type == 'x' ? "0x" : "0X");
    }
    return digits;
  }
  const double d = v.float_value("format");
  const int precision = static_cast<int>(spec.precision < 0 ? 6 : std::min<int64_t>(spec.precision, 100));
  char conv[8] = {'%', '.', '*', type == 'F' ? 'f' : type == '%' ? 'f' : type, 0};
  std::string out(128 + (std::isfinite(d) ? static_cast<size_t>(std::max(0.0, std::log10(std::fabs(d) + 1))) : 0), 0);
  const int n = std::snprintf(out.data(), out.size(), conv, precision, type == '%' ? d * 100 : d);
  out.resize(static_cast<size_t>(std::max(0, n)));
  return type == '%' ? out + "%" : out;
}

// `v` converted by `spec`: text for 's', `repr` for 'r', numbers otherwise; then the sign,
// padding and alignment.
std::string apply_spec(const Value& v, const Spec& spec) {
  std::string body;
  const bool numeric_type = spec.type && spec.type != 's' && spec.type != 'r';
  const bool number = numeric_type || (!spec.type && (v.is_number() && !v.is_bool()));
  if (spec.type == 'r') {
    body = repr(v);
  } else if (numeric_type) {
    body = format_number(v, spec);
  } else if (!spec.type && v.is_float() && spec.precision >= 0) {
    Spec g = spec;
    g.type = 'g';
    body = format_number(v, g);
  } else {
    body = to_string(v);
    if (spec.precision >= 0 && !v.is_number() && static_cast<size_t>(spec.precision) < body.size())
      body.resize(static_cast<size_t>(spec.precision));
  }
  if (number && body[0] != '-' && (spec.sign == '+' || spec.sign == ' ')) body.insert(0, 1, spec.sign);
  const auto width = static_cast<size_t>(spec.width);
  if (body.size() >= width) return body;
  check_string_size(width);
  charge_string(width);
  const size_t pad = width - body.size();
  char align = spec.align ? spec.align : number ? '>' : '<';
  if (align == '=') {
    const size_t at = !body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ') ? 1 : 0;
    return body.substr(0, at) + std::string(pad, spec.fill) + body.substr(at);
  }
  if (align == '<') return body + std::string(pad, spec.fill);
  if (align == '^') return std::string(pad / 2, spec.fill) + body + std::string(pad - pad / 2, spec.fill);
  return std::string(pad, spec.fill) + body;
}

// str.format's "[[fill]align][sign][#][0][width][,][.precision][type]".
Spec parse_format_spec(std::string_view s) {
  Spec spec;
  size_t i = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (s.size() >= 2 && is_align(s[1])) {
    spec.fill = s[0];
    spec.align = s[1];
    i = 2;
  } else if (!s.empty() && is_align(s[0])) {
    spec.align = s[0];
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) spec.sign = s[i++];
  if (i < s.size() && s[i] == '#') spec.alternate = (++i, true);
  if (i < s.size() && s[i] == '0') {
    if (!spec.align) spec.fill = '0', spec.align = '=';
    ++i;
  }
  spec.width = read_number(s, i, "width");
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) render_error("format: grouping separators are not supported");
  if (i < s.size() && s[i] == '.') spec.precision = read_number(s, ++i, "precision");
  if (i < s.size()) spec.type = s[i++];
  if (i != s.size() || (spec.type && (spec.type == '\0' || !std::strchr("sdifFeEgGxXoc%r", spec.type))))
    render_error(cat("format: unsupported format spec '", std::string(s), "'"));
  return spec;
}

// A replacement field's value: "", "0", "name", then ".attr" or "[key]" parts.
Value field_value(std::string_view field, size_t& next_auto, const std::vector<Value>& args,
                  const std::vector<std::pair<std::string, Value>>& kwargs) {
  size_t end = field.find_first_of(".[");
  const std::string_view head = field.substr(0, end);
  Value v;
  if (head.empty() || std::isdigit(static_cast<unsigned char>(head[0]))) {
    size_t i = 0;
    const size_t index = head.empty() ? next_auto++ : static_cast<size_t>(read_number(head, i, "index"));
    if (index >= args.size()) render_error(cat("format: no positional argument ", index));
    v = args[index];
  } else {
    bool found = false;
    for (const auto& [k, val] : kwargs)
      if (k == head) v = val, found = true;
    if (!found) render_error(cat("format: no keyword argument '", std::string(head), "'"));
  }
  while (end != std::string_view::npos && end < field.size()) {
    const bool attr = field[end] == '.';
    const size_t stop = attr ? field.find_first_of(".[", end + 1) : field.find(']', end);
    if (!attr && stop == std::string_view::npos) render_error("format: '[' without ']' in a replacement field");
    const std::string key(field.substr(end + 1, (stop == std::string_view::npos ? field.size() : stop) - end - 1));
    const Value* p = v.find(key);
    if (!p && v.is_array() && !key.empty() && std::isdigit(static_cast<unsigned char>(key[0]))) {
      size_t i = 0;
      const auto k = static_cast<size_t>(read_number(key, i, "index"));
      if (k < v.arr().size()) p = &v.arr()[k];
    }
    if (!p) render_error(cat("format: no item '", key, "'"));
    v = *p;
    end = attr ? stop : stop + 1;
  }
  return v;
}

}  // namespace

std::string python_format(const std::string& fmt, const std::vector<Value>& args,
                          const std::vector<std::pair<std::string, Value>>& kwargs) {
  std::string out;
  size_t next_auto = 0;
  for (size_t i = 0; i < fmt.size();) {
    const char c = fmt[i];
    if ((c == '{' || c == '}') && i + 1 < fmt.size() && fmt[i + 1] == c) {
      out += c;
      i += 2;
      continue;
    }
    if (c == '}') render_error("format: single '}' in the format string");
    if (c != '{') {
      out += c;
      ++i;
      continue;
    }
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) render_error("format: single '{' in the format string");
    std::string_view field(fmt.data() + i + 1, close - i - 1);
    std::string_view spec_text;
    if (const size_t colon = field.find(':'); colon != std::string_view::npos) {
      spec_text = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    char conversion = 0;
    if (field.size() >= 2 && field[field.size() - 2] == '!') {
      conversion = field.back();
      field.remove_suffix(2);
    }
    Spec spec = parse_format_spec(spec_text);
    const Value v = field_value(field, next_auto, args, kwargs);
    std::string piece = apply_spec(conversion ? Value(conversion == 'r' ? repr(v) : to_string(v)) : v, spec);
    check_string_size(out.size() + piece.size());
    out += piece;
    i = close + 1;
  }
  return out;
}

std::string percent_format(const std::string& fmt, const Value& args) {
  std::string out;
  size_t next = 0;
  const bool tuple = args.is_array();
  auto next_arg = [&]() -> Value {
    if (!tuple) {
      if (next++ > 0) render_error("'%' formatting: not enough arguments");
      return args;
    }
    if (next >= args.arr().size()) render_error("'%' formatting: not enough arguments");
    return args.arr()[next++];
  };
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) render_error("'%' formatting: incomplete format");
    Value named;
    if (fmt[i] == '(') {
      const size_t close = fmt.find(')', i);
      if (close == std::string::npos || !args.is_object()) render_error("'%' formatting: '%(name)' needs a mapping");
      const Value* p = args.find(fmt.substr(i + 1, close - i - 1));
      if (!p) render_error(cat("'%' formatting: no key '", fmt.substr(i + 1, close - i - 1), "'"));
      named = *p;
      i = close + 1;
    }
    Spec spec;
    spec.align = '>';
    for (; i < fmt.size() && fmt[i] != '\0' && std::strchr("-+ #0", fmt[i]); ++i) {
      if (fmt[i] == '-') spec.align = '<';
      if (fmt[i] == '+' || fmt[i] == ' ') spec.sign = fmt[i];
      if (fmt[i] == '#') spec.alternate = true;
      if (fmt[i] == '0' && spec.align != '<') spec.fill = '0', spec.align = '=';
    }
    spec.width = read_number(fmt, i, "width");
    if (i < fmt.size() && fmt[i] == '.') spec.precision = read_number(fmt, ++i, "precision");
    if (i >= fmt.size()) render_error("'%' formatting: incomplete format");
    spec.type = fmt[i] == 'i' ? 'd' : fmt[i];
    if (spec.type == '%') {
      out += '%';
      continue;
    }
    if (spec.type == '\0' || !std::strchr("sdfFeEgGxXocr", spec.type))
      render_error(cat("'%' formatting: unsupported type '", fmt[i], "'"));
    if (spec.fill == '0' && (spec.type == 's' || spec.type == 'r')) spec.fill = ' ', spec.align = '>';
    std::string piece = apply_spec(named.undefined() ? next_arg() : named, spec);
    check_string_size(out.size() + piece.size());
    out += piece;
  }
  if (tuple && next < args.arr().size()) render_error("'%' formatting: not all arguments converted");
  return out;
}

}  // namespace hfstatic::chat
