// The named built-ins of the chat-template language: filters (x|name), tests (x is name) and the
// methods of strings, mappings and lists (x.name()). Each kind is a table from name to function.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chat/parser.h"
#include "chat/value.h"

namespace hfstatic::chat {

class Interpreter;

// One call of a built-in: its name as written, evaluated positional arguments, and keyword
// arguments evaluated on demand (as Jinja does: only those the built-in reads).
struct Call {
  const Source& src;
  size_t pos = 0;
  std::string name;
  std::vector<Value> args;
  const Expr* expr = nullptr;          // the call's expression, for keyword arguments
  Interpreter* interpreter = nullptr;  // evaluates them

  const Value& arg(size_t k) const;                           // undefined past the end
  Value kwarg(const char* key) const;                         // undefined when not given
  std::vector<std::pair<std::string, Value>> kwargs() const;  // every keyword argument, evaluated
  [[noreturn]] void error(const std::string& msg) const { src.error(pos, msg); }
};

// Applies the filter call.name to v; throws "unknown filter" for a name not in the table.
Value apply_filter(const Value& v, const Call& call);
// Applies the test call.name to v; throws "unknown test" for a name not in the table.
bool apply_test(const Value& v, const Call& call);
// Calls the method call.name of v; nullopt when v is not a string, list or mapping (or a mapping
// with a key of that name), so the caller reports that the value cannot be called.
std::optional<Value> call_method(const Value& v, const Call& call);

// Helpers shared by filters and methods.
// Strips the characters of `chars` (a string) or, when it is not a string, white space.
std::string strip_chars(const std::string& s, const Value& chars, bool left, bool right);
// "upper", "lower", "title" or "capitalize" of ASCII letters.
std::string change_case(const std::string& s, const std::string& how);
// Occurrences of `from` (not empty) replaced by `to`, the first `count` (every one when negative).
std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count = -1);

// Python's str.format ("{} {0} {name:>8.2f}") and printf-style `fmt % args` (a list is a tuple of
// arguments, a mapping serves "%(name)s"). Widths are bounded by the string limit.
std::string python_format(const std::string& fmt, const std::vector<Value>& args,
                          const std::vector<std::pair<std::string, Value>>& kwargs);
std::string percent_format(const std::string& fmt, const Value& args);

}  // namespace hfstatic::chat
