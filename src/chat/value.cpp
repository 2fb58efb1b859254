#include "chat/value.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "util/error.h"

namespace hfstatic::chat {

bool truthy(const Value& v) {
  if (v.undefined() || v.none()) return false;
  if (v.is_bool()) return std::get<bool>(v.v);
  if (v.is_int()) return std::get<int64_t>(v.v) != 0;
  if (v.is_float()) return std::get<double>(v.v) != 0.0;
  if (v.is_string()) return !v.str().empty();
  if (v.is_array()) return !v.arr().empty();
  return !v.obj().empty();
}

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.num() == b.num();
  if (a.is_bool() && b.is_bool()) return std::get<bool>(a.v) == std::get<bool>(b.v);
  if (a.is_string() && b.is_string()) return a.str() == b.str();
  if (a.none() && b.none()) return true;
  if (a.undefined() && b.undefined()) return true;
  if (a.is_array() && b.is_array()) {
    if (a.arr().size() != b.arr().size()) return false;
    for (size_t i = 0; i < a.arr().size(); ++i)
      if (!equal(a.arr()[i], b.arr()[i])) return false;
    return true;
  }
  if (a.is_object() && b.is_object()) {
    if (a.obj().size() != b.obj().size()) return false;
    for (const auto& kv : a.obj()) {
      const Value* o = b.find(kv.first);
      if (!o || !equal(kv.second, *o)) return false;
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

std::string json_escape(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string to_json(const Value& v, int indent, int depth) {
  auto nl = [&](int d) { return indent < 0 ? std::string() : "\n" + std::string(static_cast<size_t>(indent * d), ' '); };
  if (v.undefined() || v.none()) return "null";
  if (v.is_bool()) return std::get<bool>(v.v) ? "true" : "false";
  if (v.is_int()) return std::to_string(std::get<int64_t>(v.v));
  if (v.is_float()) return nlohmann::json(std::get<double>(v.v)).dump();
  if (v.is_string()) return json_escape(v.str());
  const std::string sep = indent < 0 ? ", " : ",";
  if (v.is_array()) {
    if (v.arr().empty()) return "[]";
    std::string out = "[";
    for (size_t i = 0; i < v.arr().size(); ++i) {
      if (i) out += sep;
      out += nl(depth + 1) + to_json(v.arr()[i], indent, depth + 1);
    }
    return out + nl(depth) + "]";
  }
  if (v.obj().empty()) return "{}";
  std::string out = "{";
  bool first = true;
  for (const auto& kv : v.obj()) {
    if (!first) out += sep;
    first = false;
    out += nl(depth + 1) + json_escape(kv.first) + ": " + to_json(kv.second, indent, depth + 1);
  }
  return out + nl(depth) + "}";
}

std::string to_string(const Value& v) {
  if (v.undefined()) return "";
  if (v.none()) return "None";
  if (v.is_bool()) return std::get<bool>(v.v) ? "True" : "False";
  if (v.is_int()) return std::to_string(std::get<int64_t>(v.v));
  if (v.is_float()) return format_float(std::get<double>(v.v));
  if (v.is_string()) return v.str();
  return repr(v);
}

std::string repr(const Value& v) {
  if (v.is_string()) {
    std::string out = "'";
    for (char c : v.str()) {
      if (c == '\'') out += "\\'";
      else if (c == '\\') out += "\\\\";
      else if (c == '\n') out += "\\n";
      else out += c;
    }
    return out + "'";
  }
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.arr().size(); ++i) out += (i ? ", " : "") + repr(v.arr()[i]);
    return out + "]";
  }
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& kv : v.obj()) {
      out += (first ? "" : ", ") + repr(Value(kv.first)) + ": " + repr(kv.second);
      first = false;
    }
    return out + "}";
  }
  return to_string(v);
}

}  // namespace hfstatic::chat
