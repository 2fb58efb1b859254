// Filters (value|name(args)) and the string helpers they share with the methods.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "chat/budget.h"
#include "chat/builtins.h"
#include "util/error.h"

namespace hfstatic::chat {

std::string strip_chars(const std::string& s, const Value& chars, bool left, bool right) {
  auto in_set = [&](char c) {
    if (chars.is_string()) return chars.str().find(c) != std::string::npos;
    return std::isspace(static_cast<unsigned char>(c)) != 0;
  };
  size_t b = 0, e = s.size();
  if (left)
    while (b < e && in_set(s[b])) ++b;
  if (right)
    while (e > b && in_set(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::string change_case(const std::string& s, const std::string& how) {
  std::string r = s;
  if (how == "upper" || how == "lower") {
    for (auto& c : r)
      c = static_cast<char>(how == "upper" ? std::toupper(static_cast<unsigned char>(c))
                                           : std::tolower(static_cast<unsigned char>(c)));
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
  size_t hits = 0;
  for (size_t hit = s.find(from); hit != std::string::npos; hit = s.find(from, hit + from.size())) ++hits;
  if (to.size() > from.size() && hits > kMaxStringBytes / (to.size() - from.size()))
    render_error(cat("replace: ", hits, " replacements of ", from.size(), " by ", to.size(), " bytes exceed the ",
                     kMaxStringBytes >> 20, " MiB limit"));
  check_string_size(s.size() + hits * to.size() - hits * from.size());
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

// A width (indentation) that a string could hold.
void check_width(const Call& c, const char* what, int64_t width) {
  if (width < 0 || width > static_cast<int64_t>(kMaxStringBytes))
    c.error(cat(what, " ", width, " is not in [0, ", kMaxStringBytes, "]"));
}

Value tojson(const Value& v, const Call& c) {
  Value indent = c.kwarg("indent");
  if (indent.undefined()) indent = c.arg(0);
  if (!indent.is_int()) return Value(to_json(v, -1, 0));
  const int64_t width = indent.integer();
  check_width(c, "tojson: indent", width);
  return Value(to_json(v, static_cast<int>(width), 0));
}

Value string(const Value& v, const Call&) { return Value(to_string(v)); }
Value identity(const Value& v, const Call&) { return v; }
Value letter_case(const Value& v, const Call& c) { return Value(change_case(to_string(v), c.name)); }

Value to_int(const Value& v, const Call& c) {
  if (!v.is_string()) return v.is_number() || v.is_bool() ? Value(v.integer("int")) : Value(int64_t{0});
  errno = 0;
  const long long n = std::strtoll(v.str().c_str(), nullptr, 10);
  if (errno == ERANGE) c.error(cat("int: '", v.str().substr(0, 40), "' does not fit a 64-bit integer"));
  return Value(static_cast<int64_t>(n));
}

Value to_float(const Value& v, const Call&) {
  if (v.is_string()) return Value(std::strtod(v.str().c_str(), nullptr));
  return Value(v.is_number() || v.is_bool() ? v.num() : 0.0);
}

Value absolute(const Value& v, const Call& c) {
  if (v.is_int() && v.integer() == INT64_MIN) c.error("abs: the result does not fit 64 bits");
  if (!v.is_number() && !v.is_bool()) c.error("abs of a value that is not a number");
  return v.is_int() ? Value(static_cast<int64_t>(std::llabs(v.integer()))) : Value(std::fabs(v.num()));
}

Value default_value(const Value& v, const Call& c) {
  const bool boolean = c.arg(1).is_bool() && std::get<bool>(c.arg(1).v);
  if (v.undefined() || (boolean && !truthy(v))) return c.arg(0);
  return v;
}

Value list(const Value& v, const Call&) {
  if (v.is_array()) return v;
  charge_steps(static_cast<int64_t>(v.is_string() ? v.str().size() : v.is_object() ? v.obj().size() : 0));
  Array a;
  if (v.is_string())
    for (char ch : v.str()) a.emplace_back(std::string(1, ch));
  else if (v.is_object())
    for (const auto& kv : v.obj()) a.emplace_back(kv.first);
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
    charge_steps(static_cast<int64_t>(v.arr().size()));
    Array a(v.arr().rbegin(), v.arr().rend());
    return Value::array(std::move(a));
  }
  c.error("reverse of a value that is not a list or string");
}

Value join(const Value& v, const Call& c) {
  if (!v.is_array()) c.error("join of a value that is not a list");
  std::string sep = c.arg(0).is_string() ? c.arg(0).str() : "";
  std::string r;
  for (size_t i = 0; i < v.arr().size(); ++i) {
    const std::string item = to_string(v.arr()[i]);
    charge_steps(1);
    check_string_size(r.size() + sep.size() + item.size());
    r += (i ? sep : "") + item;
  }
  return Value(std::move(r));
}

Value replace(const Value& v, const Call& c) {
  std::string s = to_string(v);
  if (!c.arg(0).is_string() || !c.arg(1).is_string()) c.error("replace needs two strings");
  if (c.arg(0).str().empty()) return Value(s);
  return Value(replace_all(s, c.arg(0).str(), c.arg(1).str()));
}

Value items(const Value& v, const Call& c) {
  if (!v.is_object()) c.error("items of a value that is not a mapping");
  charge_steps(static_cast<int64_t>(v.obj().size()));
  return Value::array(items_of(v));
}

// select, reject, selectattr, rejectattr.
Value select(const Value& v, const Call& c) {
  if (!v.is_array()) c.error(cat(c.name, " of a value that is not a list"));
  const bool attr = c.name == "selectattr" || c.name == "rejectattr";
  const bool keep_true = c.name == "selectattr" || c.name == "select";
  const size_t ti = attr ? 1 : 0;
  Array out;
  charge_steps(static_cast<int64_t>(v.arr().size()));
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
  charge_steps(static_cast<int64_t>(v.arr().size()));
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

// The key under which equal() finds a value equal to `v` (numbers compare as doubles); none for
// lists, mappings and NaN, which are compared one by one.
std::optional<std::string> unique_key(const Value& v) {
  if (v.is_number()) {
    const double d = v.num() == 0 ? 0.0 : v.num();
    if (std::isnan(d)) return std::nullopt;
    std::string key(1 + sizeof d, 'n');
    std::memcpy(key.data() + 1, &d, sizeof d);
    return key;
  }
  if (v.is_string()) return "s" + v.str();
  if (v.is_bool()) return std::get<bool>(v.v) ? "T" : "F";
  if (v.none()) return "N";
  if (v.undefined()) return "U";
  return std::nullopt;
}

Value unique(const Value& v, const Call& c) {
  if (!v.is_array()) c.error("unique of a value that is not a list");
  charge_steps(static_cast<int64_t>(v.arr().size()));
  std::unordered_set<std::string> seen;
  Array out, containers;
  for (const auto& item : v.arr()) {
    if (std::optional<std::string> key = unique_key(item)) {
      if (seen.insert(std::move(*key)).second) out.push_back(item);
    } else if (std::none_of(containers.begin(), containers.end(), [&](const Value& o) { return equal(o, item); })) {
      containers.push_back(item);
      out.push_back(item);
    }
  }
  return Value::array(std::move(out));
}

Value indent(const Value& v, const Call& c) {
  const int64_t width = c.arg(0).is_int() ? c.arg(0).integer() : 4;
  const bool first = c.arg(1).is_bool() && std::get<bool>(c.arg(1).v);
  check_width(c, "indent: width", width);
  std::string s = to_string(v), r;
  const size_t lines = static_cast<size_t>(std::count(s.begin(), s.end(), '\n')) + 1;
  const size_t size = s.size() + lines * static_cast<size_t>(width);
  if (size > kMaxStringBytes)
    c.error(cat("indent: width ", width, " over ", lines, " lines exceeds the ", kMaxStringBytes >> 20, " MiB limit"));
  const std::string pad(static_cast<size_t>(width), ' ');
  for (size_t i = 0; i < s.size(); ++i) {
    r += s[i];
    if (s[i] == '\n' && i + 1 < s.size() && s[i + 1] != '\n') r += pad;
  }
  return Value(first ? pad + r : r);
}

using Filter = Value (*)(const Value& v, const Call& c);

const std::unordered_map<std::string_view, Filter>& filters() {
  static const std::unordered_map<std::string_view, Filter> table = {
      {"trim", trim},         {"length", length},     {"count", length},        {"tojson", tojson},
      {"string", string},     {"safe", identity},     {"e", identity},          {"escape", identity},
      {"upper", letter_case}, {"lower", letter_case}, {"title", letter_case},   {"capitalize", letter_case},
      {"int", to_int},        {"float", to_float},    {"abs", absolute},        {"default", default_value},
      {"d", default_value},   {"list", list},         {"first", first_or_last}, {"last", first_or_last},
      {"reverse", reverse},   {"join", join},         {"replace", replace},     {"items", items},
      {"select", select},     {"reject", select},     {"selectattr", select},   {"rejectattr", select},
      {"map", map},           {"unique", unique},     {"indent", indent},
  };
  return table;
}

}  // namespace

Value apply_filter(const Value& v, const Call& call) {
  auto it = filters().find(call.name);
  if (it == filters().end()) call.error(cat("unknown filter '", call.name, "'"));
  if (v.is_string()) charge_scan(v.str().size());
  Value result = it->second(v, call);
  if (result.is_string()) charge_string(result.str().size());
  return result;
}

}  // namespace hfstatic::chat
