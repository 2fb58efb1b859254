#include "chat/interpreter.h"

#include <algorithm>
#include <cmath>
#include <optional>

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
  Interpreter(const Source& src, Value globals) : src_(src) { scopes_.push_back(std::move(globals)); }

  void run(const Body& body, std::string& out) {
    for (const auto& n : body) exec(*n, out);
  }

 private:
  const Source& src_;
  std::vector<Value> scopes_;  // objects; innermost last

  [[noreturn]] void error(size_t pos, const std::string& msg) const { src_.error(pos, msg); }

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (const Value* v = it->find(name)) return *v;
    return Value();
  }
  void assign(const std::string& name, Value v) { scopes_.back().set(name, std::move(v)); }

  void exec(const Node& n, std::string& out) {
    switch (n.kind) {
      case NodeKind::kText: out += n.text; break;
      case NodeKind::kOutput: out += to_string(eval(*n.expr)); break;
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
      Object loop = {{"index", Value(i + 1)}, {"index0", Value(i)}, {"first", Value(i == 0)},
                     {"last", Value(i + 1 == len)}, {"length", Value(len)}, {"revindex", Value(len - i)},
                     {"revindex0", Value(len - i - 1)},
                     {"previtem", i > 0 ? items[i - 1] : Value()}, {"nextitem", i + 1 < len ? items[i + 1] : Value()}};
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

  static Value slice(const Value& v, std::optional<int64_t> lo, std::optional<int64_t> hi, int64_t step) {
    const int64_t n = v.is_string() ? static_cast<int64_t>(v.str().size()) : static_cast<int64_t>(v.arr().size());
    std::vector<int64_t> idx;
    auto norm = [&](int64_t x, int64_t lo_clamp, int64_t hi_clamp) {
      if (x < 0) x += n;
      return std::clamp(x, lo_clamp, hi_clamp);
    };
    if (step > 0) {
      const int64_t b = lo ? norm(*lo, 0, n) : 0, e = hi ? norm(*hi, 0, n) : n;
      for (int64_t k = b; k < e; k += step) idx.push_back(k);
    } else {
      const int64_t b = lo ? norm(*lo, -1, n - 1) : n - 1, e = hi ? norm(*hi, -1, n - 1) : -1;
      for (int64_t k = b; k > e; k += step) idx.push_back(k);
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
        if (e.b) lo = eval(*e.b).integer();
        if (e.c) hi = eval(*e.c).integer();
        if (!e.args.empty() && e.args[0]) step = eval(*e.args[0]).integer();
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
        if (e.name == "-") return v.is_int() ? Value(-v.integer()) : Value(-v.num());
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
    if (op == "~") return Value(to_string(l) + to_string(r));
    if (op == "==") return Value(equal(l, r));
    if (op == "!=") return Value(!equal(l, r));
    if (op == "in" || op == "not in") {
      bool found = false;
      if (r.is_string()) {
        if (!l.is_string()) error(e.pos, "'in <string>' requires a string on the left");
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
      if (l.is_string() && r.is_string()) return Value(l.str() + r.str());
      if (l.is_array() && r.is_array()) {
        Array a = l.arr();
        a.insert(a.end(), r.arr().begin(), r.arr().end());
        return Value::array(std::move(a));
      }
      if ((l.is_number() || l.is_bool()) && (r.is_number() || r.is_bool())) {
        if (l.is_float() || r.is_float()) return Value(l.num() + r.num());
        return Value(l.integer() + r.integer());
      }
      if (l.is_string() || r.is_string()) {
        if (l.undefined() || r.undefined()) return Value(to_string(l) + to_string(r));
        return Value(to_string(l) + to_string(r));
      }
      error(e.pos, "unsupported operand types for '+'");
    }
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
      int c;
      if (l.is_string() && r.is_string()) c = l.str().compare(r.str());
      else if ((l.is_number() || l.is_bool()) && (r.is_number() || r.is_bool())) c = l.num() < r.num() ? -1 : l.num() > r.num() ? 1 : 0;
      else error(e.pos, cat("cannot compare these values with '", op, "'"));
      if (op == "<") return Value(c < 0);
      if (op == ">") return Value(c > 0);
      if (op == "<=") return Value(c <= 0);
      return Value(c >= 0);
    }
    if (op == "*" && l.is_string() && r.is_int()) {
      std::string s;
      for (int64_t k = 0; k < r.integer(); ++k) s += l.str();
      return Value(s);
    }
    if (!(l.is_number() || l.is_bool()) || !(r.is_number() || r.is_bool()))
      error(e.pos, cat("unsupported operand types for '", op, "'"));
    const bool ints = !l.is_float() && !r.is_float();
    if (op == "-") return ints ? Value(l.integer() - r.integer()) : Value(l.num() - r.num());
    if (op == "*") return ints ? Value(l.integer() * r.integer()) : Value(l.num() * r.num());
    if (op == "/") {
      if (r.num() == 0) error(e.pos, "division by zero");
      return Value(l.num() / r.num());
    }
    if (op == "//" || op == "%") {
      if (r.num() == 0) error(e.pos, "division by zero");
      if (ints) {
        int64_t a = l.integer(), b = r.integer();
        int64_t q = a / b, m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) { --q; m += b; }
        return op == "//" ? Value(q) : Value(m);
      }
      const double q = std::floor(l.num() / r.num());
      return op == "//" ? Value(q) : Value(l.num() - q * r.num());
    }
    if (op == "**") return ints && r.integer() >= 0 ? Value(static_cast<int64_t>(std::llround(std::pow(l.num(), r.num())))) : Value(std::pow(l.num(), r.num()));
    error(e.pos, cat("unknown operator '", op, "'"));
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
    if (fn == "range") {
      std::vector<Value> args = eval_args(e);
      int64_t b = 0, en = 0, st = 1;
      if (args.size() == 1) en = args[0].integer();
      else if (args.size() >= 2) { b = args[0].integer(); en = args[1].integer(); if (args.size() > 2) st = args[2].integer(); }
      if (st == 0) error(e.pos, "range() step cannot be zero");
      Array a;
      for (int64_t k = b; st > 0 ? k < en : k > en; k += st) a.emplace_back(k);
      return Value::array(std::move(a));
    }
    if (fn == "strftime_now") error(e.pos, "strftime_now() is not available (no clock in templates)");
    error(e.pos, cat("unknown function '", fn, "'"));
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
  Interpreter interpreter(src, std::move(globals));
  std::string out;
  interpreter.run(body, out);
  return out;
}

}  // namespace hfstatic::chat
