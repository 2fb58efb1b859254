#include "chat/interpreter.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "chat/budget.h"
#include "chat/builtins.h"
#include "util/error.h"

namespace hfstatic::chat {
namespace {

struct BreakSignal {};
struct ContinueSignal {};

}  // namespace

class Interpreter {
  friend struct Call;  // evaluates keyword arguments on demand

 public:
  Interpreter(const Source& src, Value globals, RenderBudget& budget) : src_(src), budget_(budget) {
    scopes_.push_back(std::move(globals));
  }

  void run(const Body& body, std::string& out) {
    for (const auto& n : body) exec(*n, out);
  }

 private:
  const Source& src_;
  RenderBudget& budget_;
  std::vector<Value> scopes_;  // objects; innermost last

  // Appends to the render's output, which is bounded like any string.
  static void emit(std::string& out, const std::string& text) {
    charge_string(text.size());
    check_string_size(out.size() + text.size());
    out += text;
  }

  [[noreturn]] void error(size_t pos, const std::string& msg) const { src_.error(pos, msg); }

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (const Value* v = it->find(name)) return *v;
    return Value();
  }
  void assign(const std::string& name, Value v) { scopes_.back().set(name, std::move(v)); }

  void exec(const Node& n, std::string& out) {
    budget_.at(n.pos);
    budget_.step();
    switch (n.kind) {
      case NodeKind::kText: emit(out, n.text); break;
      case NodeKind::kOutput: emit(out, to_string(eval(*n.expr))); break;
      case NodeKind::kIf:
        for (const auto& [cond, body] : n.branches) {
          if (!cond || truthy(eval(*cond))) {
            run(body, out);
            break;
          }
        }
        break;
      case NodeKind::kSet: {
        Value v = eval(*n.expr);
        if (!n.attr.empty()) {
          Value ns = lookup(n.targets[0]);
          if (!ns.is_object() || !ns.is_namespace) error(n.pos, cat("'", n.targets[0], "' is not a namespace"));
          budget_.mutated(ns);
          ns.set(n.attr, v);
        } else if (n.targets.size() == 1) {
          assign(n.targets[0], v);
        } else {
          if (!v.is_array() || v.arr().size() != n.targets.size()) error(n.pos, "cannot unpack value in set");
          for (size_t i = 0; i < n.targets.size(); ++i) assign(n.targets[i], v.arr()[i]);
        }
        break;
      }
      case NodeKind::kFor: exec_for(n, out); break;
      case NodeKind::kBreak: throw BreakSignal{};
      case NodeKind::kContinue: throw ContinueSignal{};
    }
  }

  void exec_for(const Node& n, std::string& out) {
    Value seq = eval(*n.expr);
    // Charged before the items are built: a long string would otherwise be gigabytes of them.
    budget_.step(static_cast<int64_t>(seq.is_array()    ? seq.arr().size()
                                      : seq.is_object() ? seq.obj().size()
                                      : seq.is_string() ? seq.str().size()
                                                        : 0));
    Array items;
    if (seq.is_array()) {
      items = seq.arr();
    } else if (seq.is_object()) {
      for (const auto& kv : seq.obj()) items.emplace_back(kv.first);
    } else if (seq.is_string()) {
      for (char c : seq.str()) items.emplace_back(std::string(1, c));
    } else if (!seq.undefined() && !seq.none()) {
      error(n.expr->pos, "for loop over a value that is not iterable");
    } else if (seq.none()) {
      error(n.expr->pos, "for loop over none");
    }
    scopes_.push_back(Value::object());
    auto bind = [&](const Value& item) {
      if (n.targets.size() == 1) {
        assign(n.targets[0], item);
      } else {
        if (!item.is_array() || item.arr().size() != n.targets.size())
          error(n.pos, cat("cannot unpack loop item into ", n.targets.size(), " names"));
        for (size_t k = 0; k < n.targets.size(); ++k) assign(n.targets[k], item.arr()[k]);
      }
    };
    if (n.filter) {
      Array kept;
      for (const auto& item : items) {
        bind(item);
        if (truthy(eval(*n.filter))) kept.push_back(item);
      }
      items.swap(kept);
    }
    const size_t len = items.size();
    for (size_t i = 0; i < len; ++i) {
      bind(items[i]);
      Object loop = {{"index", Value(i + 1)},
                     {"index0", Value(i)},
                     {"first", Value(i == 0)},
                     {"last", Value(i + 1 == len)},
                     {"length", Value(len)},
                     {"revindex", Value(len - i)},
                     {"revindex0", Value(len - i - 1)},
                     {"previtem", i > 0 ? items[i - 1] : Value()},
                     {"nextitem", i + 1 < len ? items[i + 1] : Value()}};
      assign("loop", Value::object(std::move(loop)));
      try {
        run(n.body, out);
      } catch (const BreakSignal&) {
        break;
      } catch (const ContinueSignal&) {
        continue;
      }
    }
    if (len == 0) run(n.else_body, out);
    scopes_.pop_back();
  }

  Value slice(const Value& v, std::optional<int64_t> lo, std::optional<int64_t> hi, int64_t step) {
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

  Value eval(const Expr& e) {
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
      case ExprKind::kIndex: {
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

  Value binary(const Expr& e) {
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
      if (l.is_string() || r.is_string()) return concatenate(to_string(l), to_string(r));
      error(e.pos, "unsupported operand types for '+'");
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
    if (!(l.is_number() || l.is_bool()) || !(r.is_number() || r.is_bool()))
      error(e.pos, cat("unsupported operand types for '", op, "'"));
    return arithmetic(e, l, r);
  }

  Value concatenate(const std::string& a, const std::string& b) {
    charge_string(a.size() + b.size());
    return Value(a + b);
  }

  Value repeat(const Expr& e, const std::string& s, int64_t count) {
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
  Value arithmetic(const Expr& e, const Value& l, const Value& r) {
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

  Value integer_op(const Expr& e, const std::string& op, int64_t a, int64_t b) {
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

  std::vector<Value> eval_args(const Expr& e) {
    std::vector<Value> a;
    for (const auto& x : e.args) a.push_back(eval(*x));
    return a;
  }

  Value call(const Expr& e) {
    if (e.a->kind == ExprKind::kAttr) {  // obj.method(args)
      Value obj = eval(*e.a->a);
      Call c{src_, e.pos, e.a->name, eval_args(e)};
      if (std::optional<Value> r = call_method(obj, c)) return *r;
    }
    if (e.a->kind == ExprKind::kName) return call_function(e);
    error(e.pos, "this expression cannot be called");
  }

  Value call_function(const Expr& e) {
    const std::string& fn = e.a->name;
    if (fn == "raise_exception") {
      std::vector<Value> args = eval_args(e);
      error(e.pos, cat("raise_exception: ", args.empty() ? std::string() : to_string(args[0])));
    }
    if (fn == "namespace") {
      Value ns = Value::object();
      ns.is_namespace = true;
      for (const auto& [k, v] : e.kwargs) ns.set(k, eval(*v));
      return ns;
    }
    if (fn == "range") return range(e, eval_args(e));
    if (fn == "strftime_now") error(e.pos, "strftime_now() is not available (no clock in templates)");
    error(e.pos, cat("unknown function '", fn, "'"));
  }

  Value range(const Expr& e, const std::vector<Value>& args) {
    int64_t b = 0, en = 0, st = 1;
    if (args.size() == 1) {
      en = args[0].integer("range");
    } else if (args.size() >= 2) {
      b = args[0].integer("range");
      en = args[1].integer("range");
      if (args.size() > 2) st = args[2].integer("range");
    }
    if (st == 0) error(e.pos, "range() step cannot be zero");
    const __int128 span = st > 0 ? __int128{en} - b : __int128{b} - en;
    const __int128 step = st > 0 ? __int128{st} : -__int128{st};
    const __int128 count = span <= 0 ? 0 : (span + step - 1) / step;
    if (count > kMaxRenderSteps)
      error(e.pos, cat("range() of ", static_cast<int64_t>(count), " numbers exceeds the limit of ", kMaxRenderSteps,
                       " steps"));
    budget_.step(static_cast<int64_t>(count));
    Array a;
    a.reserve(static_cast<size_t>(count));
    for (int64_t k = 0; k < static_cast<int64_t>(count); ++k)
      a.emplace_back(static_cast<int64_t>(b + __int128{k} * st));
    return Value::array(std::move(a));
  }

  Value filter(const Expr& e) {
    Value v = eval(*e.a);
    return apply_filter(v, Call{src_, e.pos, e.name, eval_args(e), &e, this});
  }

  bool test(const Expr& e) {
    Value v = eval(*e.a);
    return apply_test(v, Call{src_, e.pos, e.name, eval_args(e)});
  }
};

const Value& Call::arg(size_t k) const {
  static const Value kMissing;
  return k < args.size() ? args[k] : kMissing;
}

Value Call::kwarg(const char* key) const {
  if (!expr) return Value();
  for (const auto& [k, v] : expr->kwargs)
    if (k == key) return interpreter->eval(*v);
  return Value();
}

std::string render(const Source& src, const Body& body, Value globals) {
  RenderBudget budget(src);
  Interpreter interpreter(src, std::move(globals), budget);
  std::string out;
  interpreter.run(body, out);
  return out;
}

}  // namespace hfstatic::chat
