// Expressions: names, literals, attribute and index access, slices, operators, filters, tests.
#include <algorithm>
#include <cmath>
#include <optional>

#include "chat/builtins.h"
#include "chat/interpreter_impl.h"
#include "util/error.h"

namespace hfstatic::chat {

Value Interpreter::slice(const Value& v, std::optional<int64_t> lo, std::optional<int64_t> hi, int64_t step) {
  const int64_t n = v.is_string() ? static_cast<int64_t>(v.str().size()) : static_cast<int64_t>(v.arr().size());
  std::vector<int64_t> idx;
  auto norm = [&](int64_t x, int64_t lo_clamp, int64_t hi_clamp) {
    if (x < 0) x += n;
    return std::clamp(x, lo_clamp, hi_clamp);
  };
  // 128-bit positions: a huge step must not overflow past the end. Charged before building.
  if (step > 0) {
    const int64_t b = lo ? norm(*lo, 0, n) : 0, e = hi ? norm(*hi, 0, n) : n;
    budget_.step(e > b ? static_cast<int64_t>((__int128{e} - b + step - 1) / step) : 0);
    for (__int128 k = b; k < e; k += step) idx.push_back(static_cast<int64_t>(k));
  } else {
    const int64_t b = lo ? norm(*lo, -1, n - 1) : n - 1, e = hi ? norm(*hi, -1, n - 1) : -1;
    budget_.step(b > e ? static_cast<int64_t>((__int128{b} - e - step - 1) / -__int128{step}) : 0);
    for (__int128 k = b; k > e; k += step) idx.push_back(static_cast<int64_t>(k));
  }
  if (v.is_string()) {
    std::string s;
    for (int64_t k : idx) s += v.str()[static_cast<size_t>(k)];
    return Value(s);
  }
  Array a;
  for (int64_t k : idx) a.push_back(v.arr()[static_cast<size_t>(k)]);
  return Value::array(std::move(a));
}

Value Interpreter::eval(const Expr& e) {
  DepthGuard guard(*this, e.pos);
  budget_.step();
  switch (e.kind) {
    case ExprKind::kLiteral: return e.literal;
    case ExprKind::kName: return lookup(e.name);
    case ExprKind::kList: {
      Array a;
      for (const auto& x : e.args) a.push_back(eval(*x));
      return Value::array(std::move(a));
    }
    case ExprKind::kDict: {
      Value d = Value::object();
      for (const auto& [k, v] : e.items) d.set(to_string(eval(*k)), eval(*v));
      return d;
    }
    case ExprKind::kAttr: {
      Value o = eval(*e.a);
      if (o.undefined()) error(e.pos, cat("cannot read attribute '", e.name, "' of an undefined value"));
      if (const Value* v = o.find(e.name)) return *v;
      return Value();
    }
    case ExprKind::kIndex: return index(e);
    case ExprKind::kSlice: {
      Value o = eval(*e.a);
      if (!o.is_array() && !o.is_string()) error(e.pos, "cannot slice a value that is not a list or string");
      std::optional<int64_t> lo, hi;
      int64_t step = 1;
      if (e.b) lo = eval(*e.b).integer("slice");
      if (e.c) hi = eval(*e.c).integer("slice");
      if (!e.args.empty() && e.args[0]) step = eval(*e.args[0]).integer("slice");
      if (step == 0) error(e.pos, "slice step cannot be zero");
      return slice(o, lo, hi, step);
    }
    case ExprKind::kCall: return call(e);
    case ExprKind::kFilter: return filter(e);
    case ExprKind::kTest: {
      const bool r = test(e);
      return Value(e.negate ? !r : r);
    }
    case ExprKind::kUnary: {
      Value v = eval(*e.a);
      if (e.name == "not") return Value(!truthy(v));
      if (!v.is_number()) error(e.pos, cat("unary '", e.name, "' on a non-number"));
      if (e.name == "-") return v.is_int() ? integer_op(e, "-", 0, v.integer()) : Value(-v.num());
      return v;
    }
    case ExprKind::kCond: {
      if (truthy(eval(*e.a))) return eval(*e.b);
      return e.c ? eval(*e.c) : Value();
    }
    case ExprKind::kBinary: return binary(e);
  }
  return Value();
}

Value Interpreter::binary(const Expr& e) {
  const std::string& op = e.name;
  if (op == "and") {
    Value l = eval(*e.a);
    return truthy(l) ? eval(*e.b) : l;
  }
  if (op == "or") {
    Value l = eval(*e.a);
    return truthy(l) ? l : eval(*e.b);
  }
  Value l = eval(*e.a), r = eval(*e.b);
  if (op == "~") return concatenate(to_string(l), to_string(r));
  if (op == "==") return Value(equal(l, r));
  if (op == "!=") return Value(!equal(l, r));
  if (op == "in" || op == "not in") {
    bool found = false;
    if (r.is_string()) {
      if (!l.is_string()) error(e.pos, "'in <string>' requires a string on the left");
      charge_scan(r.str().size());
      found = r.str().find(l.str()) != std::string::npos;
    } else if (r.is_array()) {
      for (const auto& x : r.arr()) found = found || equal(l, x);
    } else if (r.is_object()) {
      found = l.is_string() && r.find(l.str()) != nullptr;
    } else if (!r.undefined() && !r.none()) {
      error(e.pos, "'in' needs a string, list or mapping on the right");
    }
    return Value(op == "in" ? found : !found);
  }
  if (op == "+") {
    if (l.is_string() && r.is_string()) return concatenate(l.str(), r.str());
    if (l.is_array() && r.is_array()) {
      budget_.step(static_cast<int64_t>(l.arr().size() + r.arr().size()));
      Array a = l.arr();
      a.insert(a.end(), r.arr().begin(), r.arr().end());
      return Value::array(std::move(a));
    }
    if ((l.is_number() || l.is_bool()) && (r.is_number() || r.is_bool())) return arithmetic(e, l, r);
    // As Python: '+' joins two strings but no string with another value ('~' converts).
    error(e.pos, cat("unsupported operand types for '+': ", type_name(l), " and ", type_name(r)));
  }
  if (op == "<" || op == ">" || op == "<=" || op == ">=") {
    int c;
    if (l.is_string() && r.is_string()) {
      charge_scan(std::min(l.str().size(), r.str().size()));
      c = l.str().compare(r.str());
    } else if ((l.is_number() || l.is_bool()) && (r.is_number() || r.is_bool())) {
      c = l.num() < r.num() ? -1 : l.num() > r.num() ? 1 : 0;
    } else {
      error(e.pos, cat("cannot compare these values with '", op, "'"));
    }
    if (op == "<") return Value(c < 0);
    if (op == ">") return Value(c > 0);
    if (op == "<=") return Value(c <= 0);
    return Value(c >= 0);
  }
  if (op == "*" && l.is_string() && r.is_int()) return repeat(e, l.str(), r.integer());
  if (op == "%" && l.is_string()) return Value(percent_format(l.str(), r));
  if (!(l.is_number() || l.is_bool()) || !(r.is_number() || r.is_bool()))
    error(e.pos, cat("unsupported operand types for '", op, "'"));
  return arithmetic(e, l, r);
}

Value Interpreter::concatenate(const std::string& a, const std::string& b) {
  charge_string(a.size() + b.size());
  return Value(a + b);
}

Value Interpreter::repeat(const Expr& e, const std::string& s, int64_t count) {
  if (count <= 0 || s.empty()) return Value("");
  if (static_cast<uint64_t>(count) > kMaxStringBytes / s.size())
    error(e.pos, cat("'*': repeating a string of ", s.size(), " bytes ", count, " times exceeds the ",
                     kMaxStringBytes >> 20, " MiB limit"));
  charge_string(s.size() * static_cast<size_t>(count));
  std::string out;
  out.reserve(s.size() * static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) out += s;
  return Value(std::move(out));
}

// Numbers (and booleans) under + - * / // % **; integers stay integers unless they overflow,
// which is an Error, as is dividing by zero.
Value Interpreter::arithmetic(const Expr& e, const Value& l, const Value& r) {
  const std::string& op = e.name;
  const bool ints = !l.is_float() && !r.is_float();
  if (op == "/") {
    if (r.num() == 0) error(e.pos, "division by zero");
    return Value(l.num() / r.num());
  }
  if ((op == "//" || op == "%") && r.num() == 0) error(e.pos, "division by zero");
  if (ints && !(op == "**" && r.integer() < 0)) return integer_op(e, op, l.integer(), r.integer());
  if (op == "+") return Value(l.num() + r.num());
  if (op == "-") return Value(l.num() - r.num());
  if (op == "*") return Value(l.num() * r.num());
  if (op == "//" || op == "%") {
    const double q = std::floor(l.num() / r.num());
    return op == "//" ? Value(q) : Value(l.num() - q * r.num());
  }
  if (op == "**") return Value(std::pow(l.num(), r.num()));
  error(e.pos, cat("unknown operator '", op, "'"));
}

Value Interpreter::integer_op(const Expr& e, const std::string& op, int64_t a, int64_t b) {
  int64_t result = 0;
  bool overflow = false;
  if (op == "+") {
    overflow = __builtin_add_overflow(a, b, &result);
  } else if (op == "-") {
    overflow = __builtin_sub_overflow(a, b, &result);
  } else if (op == "*") {
    overflow = __builtin_mul_overflow(a, b, &result);
  } else if (op == "//" || op == "%") {
    if (b == 0) error(e.pos, "division by zero");
    if (b == -1) {  // INT64_MIN / -1 traps
      if (op == "%") return Value(int64_t{0});
      overflow = __builtin_sub_overflow(int64_t{0}, a, &result);
    } else {
      int64_t q = a / b, m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) {
        --q;
        m += b;
      }
      result = op == "//" ? q : m;
    }
  } else if (op == "**") {  // b >= 0
    result = 1;
    for (int64_t base = a, exp = b; exp > 0 && !overflow; exp >>= 1) {
      if (exp & 1) overflow = __builtin_mul_overflow(result, base, &result);
      if (exp > 1 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
    }
  } else {
    error(e.pos, cat("unknown operator '", op, "'"));
  }
  if (overflow) error(e.pos, cat("integer overflow in '", op, "': the result does not fit 64 bits"));
  return Value(result);
}

Value Interpreter::filter(const Expr& e) {
  Value v = eval(*e.a);
  return apply_filter(v, Call{src_, e.pos, e.name, eval_args(e), &e, this});
}

bool Interpreter::test(const Expr& e) {
  Value v = eval(*e.a);
  return apply_test(v, Call{src_, e.pos, e.name, eval_args(e)});
}

Value Interpreter::index(const Expr& e) {
  Value o = eval(*e.a);
  Value k = eval(*e.b);
  if (o.undefined()) error(e.pos, "cannot index an undefined value");
  if (o.is_object()) {
    if (const Value* v = o.find(to_string(k))) return *v;
    return Value();
  }
  if ((o.is_array() || o.is_string()) && k.is_int()) {
    const int64_t n = o.is_array() ? static_cast<int64_t>(o.arr().size()) : static_cast<int64_t>(o.str().size());
    int64_t i = k.integer();
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value();
    if (o.is_array()) return o.arr()[static_cast<size_t>(i)];
    return Value(std::string(1, o.str()[static_cast<size_t>(i)]));
  }
  return Value();
}

}  // namespace hfstatic::chat
