// Values of the chat-template language: Python-like dynamic values (undefined, none, booleans,
// integers, floats, strings, lists, insertion-ordered mappings) and their conversions.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace hfstatic::chat {

struct Value;
using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;  // insertion-ordered
struct Undefined {};
struct None {};
// A function value: a macro, a built-in global (range, namespace...) or a loop helper
// (loop.cycle, loop itself in a recursive loop). Defined by the interpreter.
struct Callable;

// Frees lists and mappings one at a time rather than recursively, so that dropping a value
// nested millions of levels deep does not overflow the stack.
struct DeferredDelete {
  void operator()(Array* a) const;
  void operator()(Object* o) const;
};

// A float converted to an integer (truncated); Error naming `operation` when it is NaN or out of
// the 64-bit range.
int64_t float_to_int(double d, const char* operation);

struct Value {
  // Strings are immutable and shared: copying a value never copies its text.
  std::variant<Undefined, None, bool, int64_t, double, std::shared_ptr<const std::string>, std::shared_ptr<Array>,
               std::shared_ptr<Object>, std::shared_ptr<const Callable>>
      v;
  bool is_namespace = false;

  Value() = default;
  Value(None) : v(None{}) {}
  Value(bool b) : v(b) {}
  Value(int64_t i) : v(i) {}
  Value(int i) : v(static_cast<int64_t>(i)) {}
  Value(size_t i) : v(static_cast<int64_t>(i)) {}
  Value(double d) : v(d) {}
  Value(std::string s) : v(std::make_shared<const std::string>(std::move(s))) {}
  Value(const char* s) : v(std::make_shared<const std::string>(s)) {}
  static Value array(Array a = {}) {
    Value r;
    r.v = std::shared_ptr<Array>(new Array(std::move(a)), DeferredDelete{});
    return r;
  }
  static Value object(Object o = {}) {
    Value r;
    r.v = std::shared_ptr<Object>(new Object(std::move(o)), DeferredDelete{});
    return r;
  }

  static Value function(std::shared_ptr<const Callable> f) {
    Value r;
    r.v = std::move(f);
    return r;
  }

  bool undefined() const { return std::holds_alternative<Undefined>(v); }
  bool none() const { return std::holds_alternative<None>(v); }
  bool is_bool() const { return std::holds_alternative<bool>(v); }
  bool is_int() const { return std::holds_alternative<int64_t>(v); }
  bool is_float() const { return std::holds_alternative<double>(v); }
  bool is_number() const { return is_int() || is_float(); }
  bool is_string() const { return std::holds_alternative<std::shared_ptr<const std::string>>(v); }
  bool is_array() const { return std::holds_alternative<std::shared_ptr<Array>>(v); }
  bool is_object() const { return std::holds_alternative<std::shared_ptr<Object>>(v); }
  bool is_callable() const { return std::holds_alternative<std::shared_ptr<const Callable>>(v); }
  const Callable& callable() const { return *std::get<std::shared_ptr<const Callable>>(v); }
  const std::string& str() const { return *std::get<std::shared_ptr<const std::string>>(v); }
  Array& arr() const { return *std::get<std::shared_ptr<Array>>(v); }
  Object& obj() const { return *std::get<std::shared_ptr<Object>>(v); }
  double num() const {
    return is_int()    ? static_cast<double>(std::get<int64_t>(v))
           : is_bool() ? (std::get<bool>(v) ? 1.0 : 0.0)
                       : std::get<double>(v);
  }
  // Error naming `operation` for a value that is not a number or does not fit 64 bits.
  int64_t integer(const char* operation = "integer conversion") const {
    if (is_int()) return std::get<int64_t>(v);
    return is_bool() ? int64_t{std::get<bool>(v)} : float_to_int(float_value(operation), operation);
  }

  double float_value(const char* operation) const;  // num(), Error naming `operation` for non-numbers

  const Value* find(const std::string& key) const {
    if (!is_object()) return nullptr;
    for (auto& kv : obj())
      if (kv.first == key) return &kv.second;
    return nullptr;
  }
  void set(const std::string& key, Value val) const {
    for (auto& kv : obj())
      if (kv.first == key) {
        kv.second = std::move(val);
        return;
      }
    obj().emplace_back(key, std::move(val));
  }
};

bool truthy(const Value& v);
// Python's name of the value's type ("str", "int", "NoneType", "dict"...), for error messages.
const char* type_name(const Value& v);
// Python's ==. This and the conversions below count their work against the render's budget
// (budget.h) and fail on values nested deeper than kMaxValueDepth (a list that contains itself).
bool equal(const Value& a, const Value& b, int depth = 0);
Value from_json(const nlohmann::ordered_json& j);
// Python's str(): None, True, 1.0, 'quoted' items inside lists and mappings; undefined is "".
std::string to_string(const Value& v);
// Python's repr().
std::string repr(const Value& v, int depth = 0);
// Python's json.dumps options, as transformers' tojson filter passes them.
struct JsonStyle {
  bool pretty = false;  // indent given: one item per line
  std::string indent;   // per level, when pretty
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;  // non-ASCII as \uXXXX escapes
};
std::string to_json(const Value& v, const JsonStyle& style, int depth = 0);
// Jinja's tojson: indent < 0 writes one line with ", " and ": " separators.
std::string to_json(const Value& v, int indent, int depth = 0);

}  // namespace hfstatic::chat
