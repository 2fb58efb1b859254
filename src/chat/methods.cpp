// Methods of strings (s.strip(), s.split(',')...), mappings (d.items(), d.get(k)...) and lists
// (l.append(x)), one table per kind of value.
#include <algorithm>
#include <cctype>
#include <string_view>
#include <unordered_map>

#include "chat/budget.h"
#include "chat/builtins.h"
#include "util/error.h"

namespace hfstatic::chat {
namespace {

using Method = Value (*)(const Value& self, const Call& c);
using MethodTable = std::unordered_map<std::string_view, Method>;

Value strip(const Value& self, const Call& c) {
  return Value(strip_chars(self.str(), c.arg(0), c.name != "rstrip", c.name != "lstrip"));
}

Value letter_case(const Value& self, const Call& c) { return Value(change_case(self.str(), c.name)); }

Value starts_or_ends_with(const Value& self, const Call& c) {
  const std::string& s = self.str();
  auto matches = [&](const Value& affix) {
    if (!affix.is_string()) c.error(cat(c.name, "() needs a string or a tuple of strings"));
    const std::string& p = affix.str();
    return p.size() <= s.size() &&
           (c.name == "startswith" ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0);
  };
  if (!c.arg(0).is_array()) return Value(matches(c.arg(0)));
  for (const Value& affix : c.arg(0).arr())
    if (matches(affix)) return Value(true);
  return Value(false);
}

// Python's split: on `sep`, or on runs of white space when it is none; at most `maxsplit`
// splits (all when negative), from the right for rsplit.
Value split(const Value& self, const Call& c) {
  const std::string& s = self.str();
  Value sep_arg = c.arg(0).undefined() ? c.kwarg("sep") : c.arg(0);
  Value max_arg = c.arg(1).undefined() ? c.kwarg("maxsplit") : c.arg(1);
  int64_t maxsplit = max_arg.is_int() ? max_arg.integer() : -1;
  const bool from_right = c.name == "rsplit";
  std::vector<std::string> parts;
  if (sep_arg.is_string()) {
    const std::string& sep = sep_arg.str();
    if (sep.empty()) c.error(cat(c.name, "() separator is empty"));
    if (!from_right) {
      size_t pos = 0;
      for (size_t hit; maxsplit != 0 && (hit = s.find(sep, pos)) != std::string::npos; pos = hit + sep.size()) {
        charge_steps(1);
        parts.push_back(s.substr(pos, hit - pos));
        --maxsplit;
      }
      parts.push_back(s.substr(pos));
    } else {
      size_t end = s.size();
      for (size_t hit;
           maxsplit != 0 && end >= sep.size() && (hit = s.rfind(sep, end - sep.size())) != std::string::npos;
           end = hit) {
        charge_steps(1);
        parts.insert(parts.begin(), s.substr(hit + sep.size(), end - hit - sep.size()));
        --maxsplit;
      }
      parts.insert(parts.begin(), s.substr(0, end));
    }
  } else {
    auto space = [&](size_t k) { return std::isspace(static_cast<unsigned char>(s[k])) != 0; };
    if (!from_right) {
      size_t i = 0;
      while (i < s.size()) {
        while (i < s.size() && space(i)) ++i;
        if (i == s.size()) break;
        size_t j = i;
        if (maxsplit == 0) {
          size_t e = s.size();
          while (e > i && space(e - 1)) --e;
          j = e;
        } else {
          while (j < s.size() && !space(j)) ++j;
          --maxsplit;
        }
        charge_steps(1);
        parts.push_back(s.substr(i, j - i));
        i = j;
      }
    } else {
      size_t j = s.size();
      while (j > 0) {
        while (j > 0 && space(j - 1)) --j;
        if (j == 0) break;
        size_t i = j;
        if (maxsplit == 0) {
          size_t b = 0;
          while (b < j && space(b)) ++b;
          i = b;
        } else {
          while (i > 0 && !space(i - 1)) --i;
          --maxsplit;
        }
        charge_steps(1);
        parts.insert(parts.begin(), s.substr(i, j - i));
        j = i;
      }
    }
  }
  Array out;
  for (auto& p : parts) out.emplace_back(std::move(p));
  return Value::array(std::move(out));
}

Value splitlines(const Value& self, const Call& c) {
  const std::string& s = self.str();
  const bool keep = truthy(c.arg(0).undefined() ? c.kwarg("keepends") : c.arg(0));
  Array lines;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\n' && s[i] != '\r') continue;
    const size_t end = i;
    if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
    charge_steps(1);
    lines.emplace_back(s.substr(start, (keep ? i + 1 : end) - start));
    start = i + 1;
  }
  if (start < s.size()) lines.emplace_back(s.substr(start));
  return Value::array(std::move(lines));
}

Value replace(const Value& self, const Call& c) {
  if (!c.arg(0).is_string() || !c.arg(1).is_string()) c.error("replace() needs two strings");
  const int64_t count = c.arg(2).is_int() ? c.arg(2).integer() : -1;
  return Value(replace_all(self.str(), c.arg(0).str(), c.arg(1).str(), count));
}

// find, rfind, index, rindex and count, with Python's optional start and end.
Value find(const Value& self, const Call& c) {
  if (!c.arg(0).is_string()) c.error(cat(c.name, "() needs a string argument"));
  const std::string& s = self.str();
  const std::string& sub = c.arg(0).str();
  const auto n = static_cast<int64_t>(s.size());
  auto bound = [&](const Value& v, int64_t fallback) {
    if (!v.is_int()) return fallback;
    int64_t x = v.integer();
    if (x < 0) x += n;
    return std::clamp<int64_t>(x, 0, n);
  };
  const int64_t start = bound(c.arg(1), 0), end = bound(c.arg(2), n);
  if (start > end) return Value(c.name == "count" ? int64_t{0} : int64_t{-1});
  const std::string window = s.substr(static_cast<size_t>(start), static_cast<size_t>(end - start));
  if (c.name == "count") {
    if (sub.empty()) return Value(static_cast<int64_t>(window.size()) + 1);
    int64_t hits = 0;
    for (size_t at = window.find(sub); at != std::string::npos; at = window.find(sub, at + sub.size())) ++hits;
    return Value(hits);
  }
  const bool right = c.name == "rfind" || c.name == "rindex";
  const size_t at = right ? window.rfind(sub) : window.find(sub);
  if (at == std::string::npos && (c.name == "index" || c.name == "rindex")) c.error("substring not found");
  return Value(at == std::string::npos ? int64_t{-1} : start + static_cast<int64_t>(at));
}

// isdigit, isalpha, isalnum, isspace, islower, isupper (ASCII classes).
Value is_class(const Value& self, const Call& c) {
  const std::string& s = self.str();
  bool cased = false;
  for (char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    bool ok = true;
    if (c.name == "isdigit") ok = std::isdigit(u);
    if (c.name == "isalpha") ok = std::isalpha(u);
    if (c.name == "isalnum") ok = std::isalnum(u);
    if (c.name == "isspace") ok = std::isspace(u);
    if (c.name == "islower") ok = !std::isupper(u), cased = cased || std::islower(u);
    if (c.name == "isupper") ok = !std::islower(u), cased = cased || std::isupper(u);
    if (!ok) return Value(false);
  }
  const bool needs_cased = c.name == "islower" || c.name == "isupper";
  return Value(!s.empty() && (!needs_cased || cased));
}

Value remove_affix(const Value& self, const Call& c) {
  if (!c.arg(0).is_string()) c.error(cat(c.name, "() needs a string argument"));
  const std::string& s = self.str();
  const std::string& a = c.arg(0).str();
  if (a.size() > s.size()) return self;
  if (c.name == "removeprefix") return s.compare(0, a.size(), a) == 0 ? Value(s.substr(a.size())) : self;
  return s.compare(s.size() - a.size(), a.size(), a) == 0 ? Value(s.substr(0, s.size() - a.size())) : self;
}

Value format(const Value& self, const Call& c) { return Value(python_format(self.str(), c.args, c.kwargs())); }

Value join(const Value& self, const Call& c) {
  const Value& items = c.arg(0);
  if (!items.is_array()) c.error("join() needs a list");
  std::string out;
  for (size_t i = 0; i < items.arr().size(); ++i) {
    const Value& item = items.arr()[i];
    if (!item.is_string()) c.error("join(): the items must be strings");
    check_string_size(out.size() + self.str().size() + item.str().size());
    charge_steps(1);
    if (i) out += self.str();
    out += item.str();
  }
  return Value(std::move(out));
}

// center, ljust, rjust and zfill.
Value justify(const Value& self, const Call& c) {
  const std::string& s = self.str();
  const int64_t width = c.arg(0).integer(c.name.c_str());
  if (width > static_cast<int64_t>(kMaxStringBytes))
    c.error(cat(c.name, "(): width ", width, " exceeds the ", kMaxStringBytes >> 20, " MiB string limit"));
  if (width <= static_cast<int64_t>(s.size())) return self;
  const size_t pad = static_cast<size_t>(width) - s.size();
  const char fill = c.arg(1).is_string() && c.arg(1).str().size() == 1 ? c.arg(1).str()[0] : ' ';
  if (c.name == "ljust") return Value(s + std::string(pad, fill));
  if (c.name == "rjust") return Value(std::string(pad, fill) + s);
  if (c.name == "zfill") {
    const size_t sign = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
    return Value(s.substr(0, sign) + std::string(pad, '0') + s.substr(sign));
  }
  const size_t left = pad / 2 + (pad & s.size() & 1);  // Python's center rounds this way
  return Value(std::string(left, fill) + s + std::string(pad - left, fill));
}

const MethodTable& string_methods() {
  static const MethodTable table = {
      {"strip", strip},
      {"lstrip", strip},
      {"rstrip", strip},
      {"upper", letter_case},
      {"lower", letter_case},
      {"title", letter_case},
      {"capitalize", letter_case},
      {"startswith", starts_or_ends_with},
      {"endswith", starts_or_ends_with},
      {"split", split},
      {"rsplit", split},
      {"splitlines", splitlines},
      {"replace", replace},
      {"find", find},
      {"rfind", find},
      {"index", find},
      {"rindex", find},
      {"count", find},
      {"isdigit", is_class},
      {"isalpha", is_class},
      {"isalnum", is_class},
      {"isspace", is_class},
      {"islower", is_class},
      {"isupper", is_class},
      {"removeprefix", remove_affix},
      {"removesuffix", remove_affix},
      {"format", format},
      {"join", join},
      {"center", justify},
      {"ljust", justify},
      {"rjust", justify},
      {"zfill", justify},
  };
  return table;
}

Value items(const Value& self, const Call&) {
  charge_steps(static_cast<int64_t>(self.obj().size()));
  Array a;
  for (const auto& kv : self.obj()) a.push_back(Value::array({Value(kv.first), kv.second}));
  return Value::array(std::move(a));
}

Value keys_or_values(const Value& self, const Call& c) {
  charge_steps(static_cast<int64_t>(self.obj().size()));
  Array a;
  for (const auto& kv : self.obj()) a.push_back(c.name == "keys" ? Value(kv.first) : kv.second);
  return Value::array(std::move(a));
}

Value get(const Value& self, const Call& c) {
  if (const Value* v = self.find(to_string(c.arg(0)))) return *v;
  return c.args.size() > 1 ? c.args[1] : Value(None{});
}

const MethodTable& mapping_methods() {
  static const MethodTable table = {
      {"items", items}, {"keys", keys_or_values}, {"values", keys_or_values}, {"get", get}};
  return table;
}

Value append(const Value& self, const Call& c) {
  record_mutation(self);
  self.arr().push_back(c.arg(0));
  return Value(None{});
}

Value list_index_or_count(const Value& self, const Call& c) {
  int64_t hits = 0;
  for (size_t i = 0; i < self.arr().size(); ++i) {
    if (!equal(self.arr()[i], c.arg(0))) continue;
    if (c.name == "index") return Value(i);
    ++hits;
  }
  if (c.name == "index") c.error("index(): the value is not in the list");
  return Value(hits);
}

const MethodTable& list_methods() {
  static const MethodTable table = {{"append", append}, {"index", list_index_or_count}, {"count", list_index_or_count}};
  return table;
}

Value call_from(const MethodTable& table, const char* kind, const Value& self, const Call& c) {
  auto it = table.find(c.name);
  if (it == table.end()) c.error(cat("unknown ", kind, " method '", c.name, "'"));
  return it->second(self, c);
}

}  // namespace

std::optional<Value> call_method(const Value& v, const Call& call) {
  if (v.is_string()) {
    charge_scan(v.str().size());
    Value result = call_from(string_methods(), "string", v, call);
    if (result.is_string()) charge_string(result.str().size());
    return result;
  }
  if (v.is_object() && !v.find(call.name)) return call_from(mapping_methods(), "mapping", v, call);
  if (v.is_array()) return call_from(list_methods(), "list", v, call);
  return std::nullopt;
}

}  // namespace hfstatic::chat
