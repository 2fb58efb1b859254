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

namespace {

// Python's s.replace('', to): `to` before each character and at the end, `count` times at most.
std::string insert_between_characters(const std::string& s, const std::string& to, int64_t count) {
  size_t characters = 0;
  for (char ch : s) characters += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  const size_t hits = count < 0 ? characters + 1 : std::min<size_t>(characters + 1, static_cast<size_t>(count));
  if (!to.empty() && hits > kMaxStringBytes / to.size())
    render_error(cat("replace: ", hits, " insertions of ", to.size(), " bytes exceed the ", kMaxStringBytes >> 20,
                     " MiB limit"));
  check_string_size(s.size() + hits * to.size());
  std::string r;
  r.reserve(s.size() + hits * to.size());
  size_t done = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && done < hits) {
      r += to;
      ++done;
    }
    r += s[i];
  }
  if (done < hits) r += to;
  return r;
}

}  // namespace

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  if (from.empty()) return insert_between_characters(s, to, count);
  size_t hits = 0;
  for (size_t hit = s.find(from); hit != std::string::npos && (count < 0 || hits < static_cast<size_t>(count));
       hit = s.find(from, hit + from.size()))
    ++hits;
  if (to.size() > from.size() && hits > kMaxStringBytes / (to.size() - from.size()))
    render_error(cat("replace: ", hits, " replacements of ", from.size(), " by ", to.size(), " bytes exceed the ",
                     kMaxStringBytes >> 20, " MiB limit"));
  check_string_size(s.size() + hits * to.size() - hits * from.size());
  std::string r;
  size_t pos = 0;
  for (size_t done = 0, hit; done < hits && (hit = s.find(from, pos)) != std::string::npos;
       pos = hit + from.size(), ++done)
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

// An argument given by keyword or at position `k`.
Value argument(const Call& c, const char* key, size_t k) {
  Value v = c.kwarg(key);
  return v.undefined() ? c.arg(k) : v;
}

// transformers' tojson: json.dumps(x, ensure_ascii, indent, separators, sort_keys).
Value tojson(const Value& v, const Call& c) {
  JsonStyle style;
  style.ensure_ascii = truthy(argument(c, "ensure_ascii", 0));
  const Value indent = argument(c, "indent", 1);
  if (indent.is_int()) {
    const int64_t width = indent.integer();
    check_width(c, "tojson: indent", width);
    style.indent = std::string(static_cast<size_t>(width), ' ');
  } else if (indent.is_string()) {
    style.indent = indent.str();
  }
  if (indent.is_int() || indent.is_string()) {
    style.pretty = true;
    style.item_separator = ",";
  }
  const Value separators = argument(c, "separators", 2);
  if (separators.is_array()) {
    const Array& pair = separators.arr();
    if (pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string())
      c.error("tojson: separators must be two strings");
    style.item_separator = pair[0].str();
    style.key_separator = pair[1].str();
  }
  style.sort_keys = truthy(argument(c, "sort_keys", 3));
  return Value(to_json(v, style));
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
  return Value(replace_all(s, c.arg(0).str(), c.arg(1).str(), c.arg(2).is_int() ? c.arg(2).integer() : -1));
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
      out.push_back(apply_filter(item, Call{c.src, c.pos, c.arg(0).str(), {c.args.begin() + 1, c.args.end()}}));
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
  const Value width_arg = argument(c, "width", 0);
  const int64_t width = width_arg.is_int() ? width_arg.integer() : 4;
  const bool first = truthy(argument(c, "first", 1));
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

Value round_number(const Value& v, const Call& c) {
  const int64_t precision = argument(c, "precision", 0).is_int() ? argument(c, "precision", 0).integer() : 0;
  const Value method_arg = argument(c, "method", 1);
  const std::string method = method_arg.is_string() ? method_arg.str() : "common";
  if (precision < 0 || precision > 20) c.error("round: precision must be in [0, 20]");
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.float_value("round") * scale;
  // Python's round: halves go to the even neighbour (the default rounding mode of nearbyint).
  const double r = method == "floor" ? std::floor(x) : method == "ceil" ? std::ceil(x) : std::nearbyint(x);
  return Value(r / scale);
}

// The item's attribute (dotted path) or, with no attribute, the item itself.
Value attribute_of(const Value& item, const Value& attribute) {
  if (!attribute.is_string()) return item;
  Value v = item;
  const std::string& path = attribute.str();
  for (size_t start = 0; start <= path.size();) {
    const size_t dot = std::min(path.find('.', start), path.size());
    const Value* p = v.find(path.substr(start, dot - start));
    v = p ? *p : Value();
    start = dot + 1;
  }
  return v;
}

// The order of sort, dictsort, min and max: numbers, then strings (case-insensitive unless asked).
bool less(const Value& a, const Value& b, bool case_sensitive) {
  charge_steps(1);
  if (a.is_string() && b.is_string()) {
    if (case_sensitive) return a.str() < b.str();
    return change_case(a.str(), "lower") < change_case(b.str(), "lower");
  }
  if ((a.is_number() || a.is_bool()) && (b.is_number() || b.is_bool())) return a.num() < b.num();
  render_error("sort: cannot compare these values");
}

Value sort(const Value& v, const Call& c) {
  if (!v.is_array()) c.error(cat(c.name, " of a value that is not a list"));
  const bool reverse = truthy(argument(c, "reverse", 0));
  const bool case_sensitive = truthy(argument(c, "case_sensitive", 1));
  const Value attribute = argument(c, "attribute", 2);
  Array a = v.arr();
  charge_steps(static_cast<int64_t>(a.size()));
  std::stable_sort(a.begin(), a.end(), [&](const Value& x, const Value& y) {
    const Value kx = attribute_of(x, attribute), ky = attribute_of(y, attribute);
    return reverse ? less(ky, kx, case_sensitive) : less(kx, ky, case_sensitive);
  });
  return Value::array(std::move(a));
}

Value min_or_max(const Value& v, const Call& c) {
  if (!v.is_array()) c.error(cat(c.name, " of a value that is not a list"));
  const bool case_sensitive = truthy(argument(c, "case_sensitive", 0));
  const Value attribute = argument(c, "attribute", 1);
  const Value* best = nullptr;
  for (const auto& item : v.arr()) {
    if (!best) {
      best = &item;
      continue;
    }
    const Value a = attribute_of(item, attribute), b = attribute_of(*best, attribute);
    if (c.name == "min" ? less(a, b, case_sensitive) : less(b, a, case_sensitive)) best = &item;
  }
  return best ? *best : Value();
}

Value dictsort(const Value& v, const Call& c) {
  if (!v.is_object()) c.error("dictsort of a value that is not a mapping");
  const bool case_sensitive = truthy(argument(c, "case_sensitive", 0));
  const Value by = argument(c, "by", 1);
  const bool by_value = by.is_string() && by.str() == "value";
  const bool reverse = truthy(argument(c, "reverse", 2));
  Array a = items_of(v);
  std::stable_sort(a.begin(), a.end(), [&](const Value& x, const Value& y) {
    const Value& kx = x.arr()[by_value ? 1 : 0];
    const Value& ky = y.arr()[by_value ? 1 : 0];
    return reverse ? less(ky, kx, case_sensitive) : less(kx, ky, case_sensitive);
  });
  return Value::array(std::move(a));
}

Value sum(const Value& v, const Call& c) {
  if (!v.is_array()) c.error("sum of a value that is not a list");
  const Value attribute = argument(c, "attribute", 0);
  Value start = argument(c, "start", 1);
  int64_t total = start.is_int() ? start.integer() : 0;
  double ftotal = start.is_float() ? start.num() : 0;
  bool is_float = start.is_float();
  for (const auto& item : v.arr()) {
    const Value x = attribute_of(item, attribute);
    if (x.is_float() || is_float) {
      ftotal = (is_float ? ftotal : static_cast<double>(total)) + x.float_value("sum");
      is_float = true;
    } else if (__builtin_add_overflow(total, x.integer("sum"), &total)) {
      c.error("sum: integer overflow");
    }
  }
  return is_float ? Value(ftotal) : Value(total);
}

Value batch(const Value& v, const Call& c) {
  if (!v.is_array()) c.error("batch of a value that is not a list");
  const int64_t size = c.arg(0).integer("batch");
  if (size <= 0 || size > kMaxRenderSteps) c.error(cat("batch: the size must be in [1, ", kMaxRenderSteps, "]"));
  const Value fill = c.arg(1);
  Array out;
  for (size_t i = 0; i < v.arr().size(); i += static_cast<size_t>(size)) {
    Array group(v.arr().begin() + static_cast<std::ptrdiff_t>(i),
                v.arr().begin() + static_cast<std::ptrdiff_t>(std::min(v.arr().size(), i + static_cast<size_t>(size))));
    if (!fill.undefined()) charge_steps(size);  // a huge size filled is the budget's to refuse
    while (!fill.undefined() && group.size() < static_cast<size_t>(size)) group.push_back(fill);
    out.push_back(Value::array(std::move(group)));
  }
  return Value::array(std::move(out));
}

Value wordcount(const Value& v, const Call& c) {
  Call words{c.src, c.pos, "split", {}};
  return Value(call_method(Value(to_string(v)), words)->arr().size());
}

Value center(const Value& v, const Call& c) {
  Call justify{c.src, c.pos, "center", {c.arg(0).undefined() ? Value(80) : c.arg(0)}};
  return *call_method(Value(to_string(v)), justify);
}

Value format_filter(const Value& v, const Call& c) {
  if (!c.kwargs().empty())
    return Value(percent_format(to_string(v), Value::object(Object(c.kwargs().begin(), c.kwargs().end()))));
  return Value(percent_format(to_string(v), Value::array(c.args)));
}

Value attr(const Value& v, const Call& c) {
  const Value* p = v.find(to_string(c.arg(0)));
  return p ? *p : Value();
}

using Filter = Value (*)(const Value& v, const Call& c);

const std::unordered_map<std::string_view, Filter>& filters() {
  static const std::unordered_map<std::string_view, Filter> table = {
      {"trim", trim},
      {"length", length},
      {"count", length},
      {"tojson", tojson},
      {"string", string},
      {"safe", identity},
      {"e", identity},
      {"escape", identity},
      {"upper", letter_case},
      {"lower", letter_case},
      {"title", letter_case},
      {"capitalize", letter_case},
      {"int", to_int},
      {"float", to_float},
      {"abs", absolute},
      {"default", default_value},
      {"d", default_value},
      {"list", list},
      {"first", first_or_last},
      {"last", first_or_last},
      {"reverse", reverse},
      {"join", join},
      {"replace", replace},
      {"items", items},
      {"select", select},
      {"reject", select},
      {"selectattr", select},
      {"rejectattr", select},
      {"map", map},
      {"unique", unique},
      {"indent", indent},
      {"round", round_number},
      {"sort", sort},
      {"min", min_or_max},
      {"max", min_or_max},
      {"dictsort", dictsort},
      {"sum", sum},
      {"batch", batch},
      {"wordcount", wordcount},
      {"center", center},
      {"format", format_filter},
      {"attr", attr},
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
