// Methods of strings (s.strip(), s.split(',')...), mappings (d.items(), d.get(k)...) and lists
// (l.append(x)), one table per kind of value.
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
  if (!c.arg(0).is_string()) c.error(cat(c.name, "() needs a string argument"));
  const std::string& p = c.arg(0).str();
  return Value(p.size() <= s.size() && (c.name == "startswith" ? s.compare(0, p.size(), p) == 0
                                                               : s.compare(s.size() - p.size(), p.size(), p) == 0));
}

Value split(const Value& self, const Call& c) {
  const std::string& s = self.str();
  Array parts;
  if (c.arg(0).is_string()) {
    const std::string& sep = c.arg(0).str();
    if (sep.empty()) c.error("split() separator is empty");
    int64_t maxsplit = c.arg(1).is_int() ? c.arg(1).integer() : -1;
    size_t pos = 0;
    for (size_t hit; maxsplit != 0 && (hit = s.find(sep, pos)) != std::string::npos;
         pos = hit + sep.size(), --maxsplit) {
      charge_steps(1);
      parts.emplace_back(s.substr(pos, hit - pos));
    }
    parts.emplace_back(s.substr(pos));
  } else {
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      size_t j = i;
      while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
      if (j > i) {
        charge_steps(1);
        parts.emplace_back(s.substr(i, j - i));
      }
      i = j;
    }
  }
  return Value::array(std::move(parts));
}

Value replace(const Value& self, const Call& c) {
  if (!c.arg(0).is_string() || !c.arg(1).is_string()) c.error("replace() needs two strings");
  if (c.arg(0).str().empty()) return self;
  return Value(replace_all(self.str(), c.arg(0).str(), c.arg(1).str()));
}

Value find(const Value& self, const Call& c) {
  if (!c.arg(0).is_string()) return Value(int64_t{-1});
  const size_t at = self.str().find(c.arg(0).str());
  return Value(at == std::string::npos ? int64_t{-1} : static_cast<int64_t>(at));
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
      {"replace", replace},
      {"find", find},
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

const MethodTable& list_methods() {
  static const MethodTable table = {{"append", append}};
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
