// Tests (value is name(args)), as the "is" operator and select/reject use them.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>
#include <unordered_map>

#include "chat/budget.h"
#include "chat/builtins.h"
#include "util/error.h"

namespace hfstatic::chat {
namespace {

bool is_true(const Value& v) { return v.is_bool() && std::get<bool>(v.v); }
bool is_false(const Value& v) { return v.is_bool() && !std::get<bool>(v.v); }

bool odd_or_even(const Value& v, const Call& c) {
  if (!v.is_int()) c.error(cat("'", c.name, "' test needs an integer"));
  return (v.integer() % 2 != 0) == (c.name == "odd");
}

bool contained_in(const Value& v, const Call& c) {
  if (c.args.empty()) return false;
  const Value& container = c.args[0];
  if (container.is_string()) {
    charge_scan(container.str().size());
    return v.is_string() && container.str().find(v.str()) != std::string::npos;
  }
  if (container.is_array())
    return std::any_of(container.arr().begin(), container.arr().end(), [&](const Value& x) { return equal(v, x); });
  if (container.is_object()) return v.is_string() && container.find(v.str());
  return false;
}

bool letter_case(const Value& v, const Call& c) {
  if (!v.is_string()) return false;
  for (char ch : v.str()) {
    const auto u = static_cast<unsigned char>(ch);
    if (c.name == "lower" ? std::isupper(u) : std::islower(u)) return false;
  }
  return true;
}

bool divisible_by(const Value& v, const Call& c) {
  const int64_t d = c.arg(0).integer("divisibleby");
  if (d == 0) c.error("divisibleby(0)");
  return d == -1 || v.integer("divisibleby") % d == 0;
}

bool compare(const Value& v, const Call& c) {
  const Value& o = c.arg(0);
  int order;
  if (v.is_string() && o.is_string()) {
    order = v.str().compare(o.str());
  } else if ((v.is_number() || v.is_bool()) && (o.is_number() || o.is_bool())) {
    order = v.num() < o.num() ? -1 : v.num() > o.num() ? 1 : 0;
  } else {
    c.error(cat("'", c.name, "' test: cannot compare these values"));
  }
  if (c.name == "gt" || c.name == "greaterthan") return order > 0;
  if (c.name == "ge") return order >= 0;
  if (c.name == "lt" || c.name == "lessthan") return order < 0;
  return order <= 0;
}

using Test = bool (*)(const Value& v, const Call& c);

const std::unordered_map<std::string_view, Test>& tests() {
  static const std::unordered_map<std::string_view, Test> table = {
      {"defined", [](const Value& v, const Call&) { return !v.undefined(); }},
      {"undefined", [](const Value& v, const Call&) { return v.undefined(); }},
      {"none", [](const Value& v, const Call&) { return v.none(); }},
      {"string", [](const Value& v, const Call&) { return v.is_string(); }},
      {"number", [](const Value& v, const Call&) { return v.is_number(); }},
      {"integer", [](const Value& v, const Call&) { return v.is_int(); }},
      {"float", [](const Value& v, const Call&) { return v.is_float(); }},
      {"boolean", [](const Value& v, const Call&) { return v.is_bool(); }},
      {"true", [](const Value& v, const Call&) { return is_true(v); }},
      {"false", [](const Value& v, const Call&) { return is_false(v); }},
      {"mapping", [](const Value& v, const Call&) { return v.is_object(); }},
      {"sequence", [](const Value& v, const Call&) { return v.is_array() || v.is_string(); }},
      {"iterable", [](const Value& v, const Call&) { return v.is_array() || v.is_string() || v.is_object(); }},
      {"callable", [](const Value& v, const Call&) { return v.is_callable(); }},
      {"divisibleby", divisible_by},
      {"gt", compare},
      {"greaterthan", compare},
      {"ge", compare},
      {"lt", compare},
      {"lessthan", compare},
      {"le", compare},
      {"odd", odd_or_even},
      {"even", odd_or_even},
      {"equalto", [](const Value& v, const Call& c) { return !c.args.empty() && equal(v, c.args[0]); }},
      {"eq", [](const Value& v, const Call& c) { return !c.args.empty() && equal(v, c.args[0]); }},
      {"==", [](const Value& v, const Call& c) { return !c.args.empty() && equal(v, c.args[0]); }},
      {"sameas", [](const Value& v, const Call& c) { return !c.args.empty() && equal(v, c.args[0]); }},
      {"ne", [](const Value& v, const Call& c) { return c.args.empty() || !equal(v, c.args[0]); }},
      {"!=", [](const Value& v, const Call& c) { return c.args.empty() || !equal(v, c.args[0]); }},
      {"in", contained_in},
      {"lower", letter_case},
      {"upper", letter_case},
  };
  return table;
}

}  // namespace

bool apply_test(const Value& v, const Call& call) {
  auto it = tests().find(call.name);
  if (it == tests().end()) call.error(cat("unknown test '", call.name, "'"));
  if (v.is_string()) charge_scan(v.str().size());
  return it->second(v, call);
}

}  // namespace hfstatic::chat
