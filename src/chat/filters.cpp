// Filters (value|name(args)) and the string helpers they share with the methods.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <unordered_map>

#include "chat/builtins.h"
#include "util/error.h"

namespace hfstatic::chat {

std::string strip_chars(const std::string& s, const Value& chars, bool left, bool right) {
  auto in_set = [&](char c) {
    if (chars.is_string()) return chars.str().find(c) != std::string::npos;
    return std::isspace(static_cast<unsigned char>(c)) != 0;
  };
  size_t b = 0, e = s.size();
  if (left) while (b < e && in_set(s[b])) ++b;
  if (right) while (e > b && in_set(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::string change_case(const std::string& s, const std::string& how) {
  std::string r = s;
  if (how == "upper" || how == "lower") {
    for (auto& c : r) c = static_cast<char>(how == "upper" ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
    return r;
  }
  bool start = true;
  for (auto& c : r) {
    const auto uc = static_cast<unsigned char>(c);
    c = static_cast<char>(start ? std::toupper(uc) : std::tolower(uc));
    start = how == "title" && !std::isalnum(uc);
  }
  return r;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to) {
  std::string r;
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size())
    r += s.substr(pos, hit - pos) + to;
  return r + s.substr(pos);
}

namespace {

Array items_of(const Value& v) {
  Array a;
  for (const auto& kv : v.obj()) a.push_back(Value::array({Value(kv.first), kv.second}));
  return a;
}

Value trim(const Value& v, const Call& c) {
  return Value(strip_chars(v.is_string() ? v.str() : to_string(v), c.arg(0), true, true));
}

Value length(const Value& v, const Call& c) {
  if (v.is_string()) {
    int64_t n = 0;  // code points
    for (unsigned char ch : v.str()) n += (ch & 0xC0) != 0x80;
    return Value(n);
  }
  if (v.is_array()) return Value(v.arr().size());
  if (v.is_object()) return Value(v.obj().size());
  c.error("length of a value without length");
}

Value tojson(const Value& v, const Call& c) {
  Value indent = c.kwarg("indent");
  if (indent.undefined()) indent = c.arg(0);
  return Value(to_json(v, indent.is_int() ? static_cast<int>(indent.integer()) : -1, 0));
}

Value string(const Value& v, const Call&) { return Value(to_string(v)); }
Value identity(const Value& v, const Call&) { return v; }
Value letter_case(const Value& v, const Call& c) { return Value(change_case(to_string(v), c.name)); }

Value to_int(const Value& v, const Call&) {
  return v.is_string() ? Value(static_cast<int64_t>(std::strtoll(v.str().c_str(), nullptr, 10))) : Value(v.integer());
}

Value to_float(const Value& v, const Call&) {
  return v.is_string() ? Value(std::strtod(v.str().c_str(), nullptr)) : Value(v.num());
}

Value absolute(const Value& v, const Call&) {
  return v.is_int() ? Value(static_cast<int64_t>(std::llabs(v.integer()))) : Value(std::fabs(v.num()));
}

Value default_value(const Value& v, const Call& c) {
  const bool boolean = c.arg(1).is_bool() && std::get<bool>(c.arg(1).v);
  if (v.undefined() || (boolean && !truthy(v))) return c.arg(0);
  return v;
}

Value list(const Value& v, const Call&) {
  if (v.is_array()) return v;
  Array a;
  if (v.is_string()) for (char ch : v.str()) a.emplace_back(std::string(1, ch));
  else if (v.is_object()) for (const auto& kv : v.obj()) a.emplace_back(kv.first);
  return Value::array(std::move(a));
}

Value first_or_last(const Value& v, const Call& c) {
  const bool first = c.name == "first";
  if (v.is_array()) return v.arr().empty() ? Value() : (first ? v.arr().front() : v.arr().back());
  if (v.is_string()) return v.str().empty() ? Value() : Value(std::string(1, first ? v.str().front() : v.str().back()));
  c.error(cat("'", c.name, "' of a value that is not a list"));
}

Value reverse(const Value& v, const Call& c) {
  if (v.is_string()) return Value(std::string(v.str().rbegin(), v.str().rend()));
  if (v.is_array()) {
    Array a(v.arr().rbegin(), v.arr().rend());
    return Value::array(std::move(a));
  }
  c.error("reverse of a value that is not a list or string");
}

Value join(const Value& v, const Call& c) {
  if (!v.is_array()) c.error("join of a value that is not a list");
  std::string sep = c.arg(0).is_string() ? c.arg(0).str() : "";
  std::string r;
  for (size_t i = 0; i < v.arr().size(); ++i) r += (i ? sep : "") + to_string(v.arr()[i]);
  return Value(r);
}

Value replace(const Value& v, const Call& c) {
  std::string s = to_string(v);
  if (!c.arg(0).is_string() || !c.arg(1).is_string()) c.error("replace needs two strings");
  if (c.arg(0).str().empty()) return Value(s);
  return Value(replace_all(s, c.arg(0).str(), c.arg(1).str()));
}

Value items(const Value& v, const Call& c) {
  if (!v.is_object()) c.error("items of a value that is not a mapping");
  return Value::array(items_of(v));
}

// select, reject, selectattr, rejectattr.
Value select(const Value& v, const Call& c) {
  if (!v.is_array()) c.error(cat(c.name, " of a value that is not a list"));
  const bool attr = c.name == "selectattr" || c.name == "rejectattr";
  const bool keep_true = c.name == "selectattr" || c.name == "select";
  const size_t ti = attr ? 1 : 0;
  Array out;
  for (const auto& item : v.arr()) {
    Value subject = item;
    if (attr) {
      const Value* p = item.find(to_string(c.arg(0)));
      subject = p ? *p : Value();
    }
    bool r;
    if (c.args.size() > ti) {
      std::vector<Value> targs(c.args.begin() + static_cast<std::ptrdiff_t>(ti + 1), c.args.end());
      r = apply_test(subject, Call{c.src, c.pos, to_string(c.args[ti]), std::move(targs)});
    } else {
      r = truthy(subject);
    }
    if (r == keep_true) out.push_back(item);
  }
  return Value::array(std::move(out));
}

Value map(const Value& v, const Call& c) {
  if (!v.is_array()) c.error("map of a value that is not a list");
  Value attribute = c.kwarg("attribute");
  Array out;
  for (const auto& item : v.arr()) {
    if (attribute.is_string()) {
      const Value* p = item.find(attribute.str());
      out.push_back(p ? *p : c.kwarg("default"));
    } else if (c.arg(0).is_string()) {
      out.push_back(apply_filter(item, Call{c.src, c.pos, c.arg(0).str(), {}}));
    }
  }
  return Value::array(std::move(out));
}

Value unique(const Value& v, const Call& c) {
  if (!v.is_array()) c.error("unique of a value that is not a list");
  Array out;
  for (const auto& item : v.arr())
    if (std::none_of(out.begin(), out.end(), [&](const Value& o) { return equal(o, item); })) out.push_back(item);
  return Value::array(std::move(out));
}

Value indent(const Value& v, const Call& c) {
  const int64_t width = c.arg(0).is_int() ? c.arg(0).integer() : 4;
  const bool first = c.arg(1).is_bool() && std::get<bool>(c.arg(1).v);
  const std::string pad(static_cast<size_t>(width), ' ');
  std::string s = to_string(v), r;
  for (size_t i = 0; i < s.size(); ++i) {
    r += s[i];
    if (s[i] == '\n' && i + 1 < s.size() && s[i + 1] != '\n') r += pad;
  }
  return Value(first ? pad + r : r);
}

using Filter = Value (*)(const Value& v, const Call& c);

const std::unordered_map<std::string_view, Filter>& filters() {
  static const std::unordered_map<std::string_view, Filter> table = {
      {"trim", trim},         {"length", length},       {"count", length},        {"tojson", tojson},
      {"string", string},     {"safe", identity},       {"e", identity},          {"escape", identity},
      {"upper", letter_case}, {"lower", letter_case},   {"title", letter_case},   {"capitalize", letter_case},
      {"int", to_int},        {"float", to_float},      {"abs", absolute},        {"default", default_value},
      {"d", default_value},   {"list", list},           {"first", first_or_last}, {"last", first_or_last},
      {"reverse", reverse},   {"join", join},           {"replace", replace},     {"items", items},
      {"select", select},     {"reject", select},       {"selectattr", select},   {"rejectattr", select},
      {"map", map},           {"unique", unique},       {"indent", indent},
  };
  return table;
}

}  // namespace

Value apply_filter(const Value& v, const Call& call) {
  auto it = filters().find(call.name);
  if (it == filters().end()) call.error(cat("unknown filter '", call.name, "'"));
  return it->second(v, call);
}

}  // namespace hfstatic::chat
