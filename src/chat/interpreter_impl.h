// The interpreter's state and its parts, shared by interpreter.cpp (statements and loops),
// expressions.cpp (expressions and operators) and callables.cpp (macros, call blocks and the
// global functions).
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chat/budget.h"
#include "chat/interpreter.h"
#include "chat/parser.h"
#include "chat/value.h"

namespace hfstatic::chat {

class Interpreter;

// The evaluated arguments of a call of a function value.
struct Arguments {
  size_t pos = 0;
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct Callable {
  std::string name;
  std::function<Value(Interpreter&, Arguments&)> invoke;
};

// Nesting of statements and expressions being executed, macro calls and recursive loops
// included: bounded so that a template recursing without end is an Error, not a stack overflow.
inline constexpr int kMaxRenderDepth = 500;
// The key of a recursive loop's `loop` under which its callable part is stored (loop(children)).
inline constexpr const char* kLoopCallName = " call";

class Interpreter {
  friend struct Call;  // evaluates keyword arguments on demand

 public:
  Interpreter(const Source& src, Value globals, RenderBudget& budget, const ChatTemplateOptions& options);

  void run(const Body& body, std::string& out);
  Value eval(const Expr& e);
  [[noreturn]] void error(size_t pos, const std::string& msg) const { src_.error(pos, msg); }
  const ChatTemplateOptions& options() const { return options_; }

 private:
  struct DepthGuard {
    Interpreter& in;
    DepthGuard(Interpreter& interpreter, size_t pos);
    ~DepthGuard() { --in.depth_; }
  };

  const Source& src_;
  RenderBudget& budget_;
  const ChatTemplateOptions& options_;
  std::vector<Value> scopes_;  // mappings; the built-ins, the context, then innermost last
  int depth_ = 0;

  static void emit(std::string& out, const std::string& text);
  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v);
  // A name or namespace attribute (`attr` not empty) set by {% set %}.
  void assign_target(const Node& n, const std::string& target, const std::string& attr, Value v);

  // interpreter.cpp
  void exec(const Node& n, std::string& out);
  void exec_for(const Node& n, std::string& out);
  void loop_over(const Node& n, const Value& seq, int depth, std::string& out);
  Value loop_object(const Node& n, const Array& items, size_t i, int depth);
  Value render_filtered_body(const Node& n);

  // expressions.cpp
  Value binary(const Expr& e);
  Value index(const Expr& e);
  Value slice(const Value& v, std::optional<int64_t> lo, std::optional<int64_t> hi, int64_t step);
  Value concatenate(const std::string& a, const std::string& b);
  Value repeat(const Expr& e, const std::string& s, int64_t count);
  Value arithmetic(const Expr& e, const Value& l, const Value& r);
  Value integer_op(const Expr& e, const std::string& op, int64_t a, int64_t b);
  Value filter(const Expr& e);
  bool test(const Expr& e);

  // callables.cpp
  Value call(const Expr& e);
  Value invoke(const Value& fn, Arguments& args);
  Arguments eval_arguments(const Expr& e);
  std::vector<Value> eval_args(const Expr& e);
  void define_macro(const Node& n);
  void exec_call_block(const Node& n, std::string& out);
  // Runs the body of a macro or call block `n` as a function: a scope holding its parameters
  // bound to `args` (and `varargs`, `kwargs`, `caller`) over the scopes `outer`.
  Value call_body(const Node& n, const std::vector<Value>& outer, Arguments& args);
  void install_globals();
};

}  // namespace hfstatic::chat
