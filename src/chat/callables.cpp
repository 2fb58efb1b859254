// Calls: macros and call blocks, the global functions (range, namespace, dict, raise_exception,
// strftime_now), methods of strings, mappings and lists, and keyword arguments of built-ins.
#include <ctime>
#include <memory>

#include "chat/builtins.h"
#include "chat/interpreter_impl.h"
#include "util/error.h"

namespace hfstatic::chat {
namespace {

Value range(Interpreter& in, Arguments& a) {
  const auto& args = a.positional;
  int64_t b = 0, en = 0, st = 1;
  if (args.size() == 1) {
    en = args[0].integer("range");
  } else if (args.size() >= 2) {
    b = args[0].integer("range");
    en = args[1].integer("range");
    if (args.size() > 2) st = args[2].integer("range");
  }
  if (st == 0) in.error(a.pos, "range() step cannot be zero");
  const __int128 span = st > 0 ? __int128{en} - b : __int128{b} - en;
  const __int128 step = st > 0 ? __int128{st} : -__int128{st};
  const __int128 count = span <= 0 ? 0 : (span + step - 1) / step;
  if (count > kMaxRenderSteps)
    in.error(a.pos, cat("range() of ", static_cast<int64_t>(count), " numbers exceeds the limit of ", kMaxRenderSteps,
                        " steps"));
  charge_steps(static_cast<int64_t>(count));
  Array out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t k = 0; k < static_cast<int64_t>(count); ++k)
    out.emplace_back(static_cast<int64_t>(b + __int128{k} * st));
  return Value::array(std::move(out));
}

// dict(mapping, key=value...) and namespace(...): a new mapping of the given items.
Value mapping(Interpreter& in, Arguments& a, bool is_namespace) {
  Value m = Value::object();
  m.is_namespace = is_namespace;
  for (const Value& p : a.positional) {
    if (!p.is_object()) in.error(a.pos, cat(is_namespace ? "namespace" : "dict", "() takes mappings"));
    for (const auto& [k, v] : p.obj()) m.set(k, v);
  }
  for (auto& [k, v] : a.keyword) m.set(k, v);
  return m;
}

Value strftime_now(Interpreter& in, Arguments& a) {
  if (a.positional.empty() || !a.positional[0].is_string()) in.error(a.pos, "strftime_now() needs a format string");
  const std::string& format = a.positional[0].str();
  if (format.size() > 256) in.error(a.pos, "strftime_now(): the format is longer than 256 bytes");
  std::tm now{};
  if (in.options().now) {
    now = in.options().now();
  } else {
    const std::time_t t = std::time(nullptr);
    localtime_r(&t, &now);
  }
  char buf[4096];
  const size_t n = format.empty() ? 0 : std::strftime(buf, sizeof buf, format.c_str(), &now);
  return Value(std::string(buf, n));
}

}  // namespace

void Interpreter::install_globals() {
  auto add = [&](const char* name, std::function<Value(Interpreter&, Arguments&)> fn) {
    scopes_[0].set(name, Value::function(std::make_shared<Callable>(Callable{name, std::move(fn)})));
  };
  add("range", range);
  add("namespace", [](Interpreter& in, Arguments& a) { return mapping(in, a, true); });
  add("dict", [](Interpreter& in, Arguments& a) { return mapping(in, a, false); });
  add("strftime_now", strftime_now);
  add("raise_exception", [](Interpreter& in, Arguments& a) -> Value {
    in.error(a.pos, cat("raise_exception: ", a.positional.empty() ? std::string() : to_string(a.positional[0])));
  });
}

std::vector<Value> Interpreter::eval_args(const Expr& e) {
  std::vector<Value> a;
  for (const auto& x : e.args) a.push_back(eval(*x));
  if (e.kind == ExprKind::kCall && e.b) {
    Value rest = eval(*e.b);
    if (!rest.is_array()) error(e.b->pos, "*arguments must be a list");
    charge_steps(static_cast<int64_t>(rest.arr().size()));
    a.insert(a.end(), rest.arr().begin(), rest.arr().end());
  }
  return a;
}

Arguments Interpreter::eval_arguments(const Expr& e) {
  Arguments a{e.pos, eval_args(e), {}};
  for (const auto& [k, v] : e.kwargs) a.keyword.emplace_back(k, eval(*v));
  if (e.c) {
    Value rest = eval(*e.c);
    if (!rest.is_object()) error(e.c->pos, "**arguments must be a mapping");
    charge_steps(static_cast<int64_t>(rest.obj().size()));
    for (const auto& kv : rest.obj()) a.keyword.push_back(kv);
  }
  return a;
}

Value Interpreter::invoke(const Value& fn, Arguments& args) {
  if (fn.is_callable()) return fn.callable().invoke(*this, args);
  if (const Value* call = fn.find(kLoopCallName); call && call->is_callable())
    return call->callable().invoke(*this, args);
  error(args.pos, "this expression cannot be called");
}

Value Interpreter::call(const Expr& e) {
  if (e.a->kind == ExprKind::kAttr) {  // obj.name(args): a function stored under name, or a method
    Value obj = eval(*e.a->a);
    if (const Value* fn = obj.find(e.a->name); fn && fn->is_callable()) {
      Arguments args = eval_arguments(e);
      return invoke(*fn, args);
    }
    Call c{src_, e.pos, e.a->name, eval_args(e), &e, this};
    if (std::optional<Value> r = call_method(obj, c)) return *r;
    error(e.pos, cat("'", e.a->name, "' cannot be called on this value"));
  }
  Value fn = eval(*e.a);
  if (e.a->kind == ExprKind::kName && fn.undefined()) error(e.pos, cat("unknown function '", e.a->name, "'"));
  Arguments args = eval_arguments(e);
  return invoke(fn, args);
}

Value Interpreter::call_body(const Node& n, const std::vector<Value>& outer, Arguments& args) {
  Value local = Value::object();
  std::vector<Value> saved = std::move(scopes_);
  scopes_ = outer;
  scopes_.push_back(local);
  struct Restore {
    std::vector<Value>& scopes;
    std::vector<Value>& saved;
    ~Restore() { scopes = std::move(saved); }
  } restore{scopes_, saved};
  Array varargs;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < n.params.size())
      assign(n.params[i].first, args.positional[i]);
    else
      varargs.push_back(args.positional[i]);
  }
  Value kwargs = Value::object();
  for (auto& [k, v] : args.keyword) {
    bool is_param = k == "caller" && v.is_callable();  // from {% call %}
    for (const auto& p : n.params) is_param = is_param || p.first == k;
    if (is_param)
      assign(k, v);
    else
      kwargs.set(k, v);
  }
  for (const auto& [param, default_value] : n.params)
    if (!local.find(param)) assign(param, default_value ? eval(*default_value) : Value());
  assign("varargs", Value::array(std::move(varargs)));
  assign("kwargs", std::move(kwargs));
  std::string out;
  run(n.body, out);
  return Value(std::move(out));
}

void Interpreter::define_macro(const Node& n) {
  const Node* node = &n;
  std::vector<Value> outer = scopes_;
  // The macro lives in the scope it captures: the budget empties that scope after the render,
  // which frees the cycle.
  budget_.mutated(scopes_.back());
  auto fn = [node, outer = std::move(outer)](Interpreter& in, Arguments& a) { return in.call_body(*node, outer, a); };
  assign(n.text, Value::function(std::make_shared<Callable>(Callable{n.text, std::move(fn)})));
}

void Interpreter::exec_call_block(const Node& n, std::string& out) {
  const Node* node = &n;
  std::vector<Value> here = scopes_;
  auto body = [node, here = std::move(here)](Interpreter& in, Arguments& a) { return in.call_body(*node, here, a); };
  const Value caller = Value::function(std::make_shared<Callable>(Callable{"caller", std::move(body)}));
  const Expr& call = *n.expr;
  Value fn = eval(*call.a);
  if (!fn.is_callable()) error(call.pos, "{% call %} needs a macro");
  Arguments args = eval_arguments(call);
  args.keyword.emplace_back("caller", caller);
  emit(out, to_string(invoke(fn, args)));
}

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

std::vector<std::pair<std::string, Value>> Call::kwargs() const {
  std::vector<std::pair<std::string, Value>> all;
  if (expr)
    for (const auto& [k, v] : expr->kwargs) all.emplace_back(k, interpreter->eval(*v));
  return all;
}

}  // namespace hfstatic::chat
