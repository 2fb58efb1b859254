#include "chat/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <variant>

#include "chat/budget.h"
#include "util/error.h"

namespace hfstatic::chat {
namespace {

thread_local std::vector<std::variant<Array*, Object*>> pending_deletes;
thread_local bool deleting = false;

// Deleting a container drops its elements, whose containers land here rather than being deleted
// inside this one's destructor: the loop, not the stack, walks the nesting.
template <typename T>
void delete_later(T* container) {
  pending_deletes.emplace_back(container);
  if (deleting) return;
  deleting = true;
  while (!pending_deletes.empty()) {
    auto next = pending_deletes.back();
    pending_deletes.pop_back();
    std::visit([](auto* p) { delete p; }, next);
  }
  deleting = false;
}

}  // namespace

void DeferredDelete::operator()(Array* a) const { delete_later(a); }
void DeferredDelete::operator()(Object* o) const { delete_later(o); }

int64_t float_to_int(double d, const char* operation) {
  // 2^63 is exactly representable; every double below it in magnitude converts.
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
    render_error(cat(operation, ": ", d, " does not fit a 64-bit integer"));
  return static_cast<int64_t>(d);
}

double Value::float_value(const char* operation) const {
  if (!is_number() && !is_bool()) render_error(cat(operation, ": expected a number"));
  return num();
}

const char* type_name(const Value& v) {
  if (v.undefined()) return "Undefined";
  if (v.none()) return "NoneType";
  if (v.is_bool()) return "bool";
  if (v.is_int()) return "int";
  if (v.is_float()) return "float";
  if (v.is_string()) return "str";
  if (v.is_array()) return "list";
  if (v.is_callable()) return "function";
  return v.is_namespace ? "Namespace" : "dict";
}

bool truthy(const Value& v) {
  if (v.undefined() || v.none()) return false;
  if (v.is_bool()) return std::get<bool>(v.v);
  if (v.is_int()) return std::get<int64_t>(v.v) != 0;
  if (v.is_float()) return std::get<double>(v.v) != 0.0;
  if (v.is_string()) return !v.str().empty();
  if (v.is_array()) return !v.arr().empty();
  if (v.is_callable()) return true;
  return !v.obj().empty();
}

bool equal(const Value& a, const Value& b, int depth) {
  enter_value(depth);
  if (a.is_number() && b.is_number()) return a.num() == b.num();
  if (a.is_bool() && b.is_bool()) return std::get<bool>(a.v) == std::get<bool>(b.v);
  if (a.is_string() && b.is_string()) {
    charge_scan(std::min(a.str().size(), b.str().size()));
    return a.str() == b.str();
  }
  if (a.none() && b.none()) return true;
  if (a.undefined() && b.undefined()) return true;
  if (a.is_callable() && b.is_callable()) return &a.callable() == &b.callable();
  if (a.is_array() && b.is_array()) {
    if (&a.arr() == &b.arr()) return true;  // as Python's lists compare themselves
    if (a.arr().size() != b.arr().size()) return false;
    for (size_t i = 0; i < a.arr().size(); ++i)
      if (!equal(a.arr()[i], b.arr()[i], depth + 1)) return false;
    return true;
  }
  if (a.is_object() && b.is_object()) {
    if (&a.obj() == &b.obj()) return true;
    if (a.obj().size() != b.obj().size()) return false;
    charge_steps(static_cast<int64_t>(a.obj().size() * a.obj().size()));  // find is linear
    for (const auto& kv : a.obj()) {
      const Value* o = b.find(kv.first);
      if (!o || !equal(kv.second, *o, depth + 1)) return false;
    }
    return true;
  }
  return false;
}

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value(None{});
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
    case nlohmann::ordered_json::value_t::number_unsigned: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Array a;
      for (const auto& e : j) a.push_back(from_json(e));
      return Value::array(std::move(a));
    }
    case nlohmann::ordered_json::value_t::object: {
      Object o;
      for (auto it = j.begin(); it != j.end(); ++it) o.emplace_back(it.key(), from_json(it.value()));
      return Value::object(std::move(o));
    }
    default: return Value();
  }
}

namespace {

std::string format_float(double d) {
  if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e16) {
    return cat(static_cast<int64_t>(d), ".0");
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", d);
  // Shortest representation that round-trips.
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  return buf;
}

// Python's json string escaping: quotes, backslashes and control characters; with
// `ensure_ascii`, every code point past ASCII as \uXXXX (surrogate pairs past the BMP). Bytes
// that are not UTF-8 read as U+FFFD.
std::string json_escape(const std::string& s, bool ensure_ascii) {
  charge_scan(s.size());
  std::string out = "\"";
  auto hex4 = [&](uint32_t u) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", u);
    out += buf;
  };
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20 || (ensure_ascii && c == 0x7f))
            hex4(c);
          else
            out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    const size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    uint32_t cp = len == 4 ? c & 0x07 : len == 3 ? c & 0x0F : c & 0x1F;
    bool valid = len > 1 && i + len <= s.size();
    for (size_t k = 1; valid && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      valid = (cc & 0xC0) == 0x80;
      cp = (cp << 6) | (cc & 0x3F);
    }
    valid = valid && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF) &&
            cp >= (len == 2   ? 0x80u
                   : len == 3 ? 0x800u
                              : 0x10000u);
    if (!valid) {
      cp = 0xFFFD;
      i += 1;
    } else {
      i += len;
    }
    if (!ensure_ascii) {
      if (valid)
        out.append(s, i - len, len);
      else
        out += "\xEF\xBF\xBD";
    } else if (cp >= 0x10000) {
      hex4(0xD800 + ((cp - 0x10000) >> 10));
      hex4(0xDC00 + ((cp - 0x10000) & 0x3FF));
    } else {
      hex4(cp);
    }
    check_string_size(out.size());
  }
  return out + "\"";
}

std::string json_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return nlohmann::json(d).dump();
}

}  // namespace

std::string to_json(const Value& v, const JsonStyle& style, int depth) {
  enter_value(depth);
  auto newline = [&](std::string& out, int d) {
    if (!style.pretty) return;
    const size_t width = style.indent.size() * static_cast<size_t>(d);
    check_string_size(out.size() + 1 + width);
    out += '\n';
    for (int k = 0; k < d; ++k) out += style.indent;
  };
  auto append = [](std::string& out, const std::string& piece) {
    check_string_size(out.size() + piece.size());
    out += piece;
  };
  if (v.undefined() || v.none()) return "null";
  if (v.is_bool()) return std::get<bool>(v.v) ? "true" : "false";
  if (v.is_int()) return std::to_string(std::get<int64_t>(v.v));
  if (v.is_float()) return json_float(std::get<double>(v.v));
  if (v.is_string()) return json_escape(v.str(), style.ensure_ascii);
  if (v.is_callable()) render_error("tojson: a function cannot be serialised");
  if (v.is_array()) {
    if (v.arr().empty()) return "[]";
    std::string out = "[";
    for (size_t i = 0; i < v.arr().size(); ++i) {
      if (i) append(out, style.item_separator);
      newline(out, depth + 1);
      append(out, to_json(v.arr()[i], style, depth + 1));
    }
    newline(out, depth);
    return out + "]";
  }
  if (v.obj().empty()) return "{}";
  std::vector<const std::pair<std::string, Value>*> entries;
  for (const auto& kv : v.obj()) entries.push_back(&kv);
  if (style.sort_keys) {
    charge_steps(static_cast<int64_t>(entries.size()));
    std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
  }
  std::string out = "{";
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i) append(out, style.item_separator);
    newline(out, depth + 1);
    append(out, json_escape(entries[i]->first, style.ensure_ascii) + style.key_separator);
    append(out, to_json(entries[i]->second, style, depth + 1));
  }
  newline(out, depth);
  return out + "}";
}

std::string to_json(const Value& v, int indent, int depth) {
  JsonStyle style;
  if (indent >= 0) {
    style.pretty = true;
    style.indent = std::string(static_cast<size_t>(indent), ' ');
    style.item_separator = ",";
  }
  return to_json(v, style, depth);
}

std::string to_string(const Value& v) {
  if (v.undefined()) return "";
  if (v.none()) return "None";
  if (v.is_bool()) return std::get<bool>(v.v) ? "True" : "False";
  if (v.is_int()) return std::to_string(std::get<int64_t>(v.v));
  if (v.is_float()) return format_float(std::get<double>(v.v));
  if (v.is_string()) return v.str();
  if (v.is_callable()) return "<function>";
  return repr(v);
}

std::string repr(const Value& v, int depth) {
  enter_value(depth);
  if (v.is_string()) {
    size_t size = 2;
    for (char c : v.str()) size += (c == '\'' || c == '\\' || c == '\n') ? 2 : 1;
    check_string_size(size);
    charge_scan(v.str().size());
    std::string out;
    out.reserve(size);
    out += '\'';
    for (char c : v.str()) {
      if (c == '\'')
        out += "\\'";
      else if (c == '\\')
        out += "\\\\";
      else if (c == '\n')
        out += "\\n";
      else
        out += c;
    }
    return out + "'";
  }
  auto append = [](std::string& out, const std::string& piece) {
    check_string_size(out.size() + piece.size());
    out += piece;
  };
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.arr().size(); ++i) {
      if (i) out += ", ";
      append(out, repr(v.arr()[i], depth + 1));
    }
    return out + "]";
  }
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& kv : v.obj()) {
      if (!first) out += ", ";
      first = false;
      append(out, repr(Value(kv.first), depth + 1) + ": ");
      append(out, repr(kv.second, depth + 1));
    }
    return out + "}";
  }
  return to_string(v);
}

}  // namespace hfstatic::chat
