// Statements: output, if, for (with `loop.*` and recursion), set, block set, filter blocks.
#include "chat/interpreter.h"

#include <memory>

#include "chat/builtins.h"
#include "chat/interpreter_impl.h"
#include "util/error.h"

namespace hfstatic::chat {
namespace {

struct BreakSignal {};
struct ContinueSignal {};

int64_t iteration_count(const Value& seq) {
  return static_cast<int64_t>(seq.is_array()    ? seq.arr().size()
                              : seq.is_object() ? seq.obj().size()
                              : seq.is_string() ? seq.str().size()
                                                : 0);
}

}  // namespace

Interpreter::Interpreter(const Source& src, Value globals, RenderBudget& budget, const ChatTemplateOptions& options)
    : src_(src), budget_(budget), options_(options) {
  scopes_.push_back(Value::object());
  scopes_.push_back(std::move(globals));
  install_globals();
}

Interpreter::DepthGuard::DepthGuard(Interpreter& interpreter, size_t pos) : in(interpreter) {
  if (++in.depth_ > kMaxRenderDepth) {
    --in.depth_;
    in.error(pos, cat("the template recurses deeper than ", kMaxRenderDepth, " levels"));
  }
}

void Interpreter::run(const Body& body, std::string& out) {
  for (const auto& n : body) exec(*n, out);
}

void Interpreter::emit(std::string& out, const std::string& text) {
  charge_string(text.size());
  check_string_size(out.size() + text.size());
  out += text;
}

Value Interpreter::lookup(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
    if (const Value* v = it->find(name)) return *v;
  return Value();
}

void Interpreter::assign(const std::string& name, Value v) { scopes_.back().set(name, std::move(v)); }

void Interpreter::assign_target(const Node& n, const std::string& target, const std::string& attr, Value v) {
  if (attr.empty()) return assign(target, std::move(v));
  Value ns = lookup(target);
  if (!ns.is_object() || !ns.is_namespace) error(n.pos, cat("'", target, "' is not a namespace"));
  budget_.mutated(ns);
  ns.set(attr, std::move(v));
}

void Interpreter::exec(const Node& n, std::string& out) {
  DepthGuard guard(*this, n.pos);
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
      if (n.targets.size() == 1) {
        assign_target(n, n.targets[0], n.attr, std::move(v));
      } else {
        if (!v.is_array() || v.arr().size() != n.targets.size()) error(n.pos, "cannot unpack value in set");
        for (size_t i = 0; i < n.targets.size(); ++i) assign(n.targets[i], v.arr()[i]);
      }
      break;
    }
    case NodeKind::kSetBlock: assign_target(n, n.targets[0], n.attr, render_filtered_body(n)); break;
    case NodeKind::kFilterBlock: emit(out, to_string(render_filtered_body(n))); break;
    case NodeKind::kFor: exec_for(n, out); break;
    case NodeKind::kBreak: throw BreakSignal{};
    case NodeKind::kContinue: throw ContinueSignal{};
    case NodeKind::kMacro: define_macro(n); break;
    case NodeKind::kCallBlock: exec_call_block(n, out); break;
  }
}

// The body of a block set or filter block, rendered and passed through its filter chain.
Value Interpreter::render_filtered_body(const Node& n) {
  std::string text;
  run(n.body, text);
  if (!n.filter) return Value(std::move(text));
  scopes_.push_back(Value::object({{kBlockBodyName, Value(std::move(text))}}));
  Value result;
  try {
    result = eval(*n.filter);
  } catch (...) {
    scopes_.pop_back();
    throw;
  }
  scopes_.pop_back();
  return result;
}

void Interpreter::exec_for(const Node& n, std::string& out) { loop_over(n, eval(*n.expr), 0, out); }

Value Interpreter::loop_object(const Node& n, const Array& items, size_t i, int depth) {
  const size_t len = items.size();
  auto cycle = std::make_shared<Callable>(Callable{"loop.cycle", [i](Interpreter& in, Arguments& a) {
                                                     if (a.positional.empty())
                                                       in.error(a.pos, "loop.cycle() needs at least one value");
                                                     return a.positional[i % a.positional.size()];
                                                   }});
  Object loop = {{"index", Value(i + 1)},
                 {"index0", Value(i)},
                 {"first", Value(i == 0)},
                 {"last", Value(i + 1 == len)},
                 {"length", Value(len)},
                 {"revindex", Value(len - i)},
                 {"revindex0", Value(len - i - 1)},
                 {"previtem", i > 0 ? items[i - 1] : Value()},
                 {"nextitem", i + 1 < len ? items[i + 1] : Value()},
                 {"depth", Value(depth + 1)},
                 {"depth0", Value(depth)},
                 {"cycle", Value::function(std::move(cycle))}};
  if (n.recursive) {
    const Node* node = &n;
    auto recurse = [node, depth](Interpreter& in, Arguments& a) {
      std::string text;
      in.loop_over(*node, a.positional.empty() ? Value() : a.positional[0], depth + 1, text);
      return Value(std::move(text));
    };
    loop.emplace_back(kLoopCallName, Value::function(std::make_shared<Callable>(Callable{"loop", recurse})));
  }
  return Value::object(std::move(loop));
}

void Interpreter::loop_over(const Node& n, const Value& seq, int depth, std::string& out) {
  // Charged before the items are built: a long string would otherwise be gigabytes of them.
  budget_.step(iteration_count(seq));
  Array items;
  if (seq.is_array()) {
    items = seq.arr();
  } else if (seq.is_object()) {
    for (const auto& kv : seq.obj()) items.emplace_back(kv.first);
  } else if (seq.is_string()) {
    for (char c : seq.str()) items.emplace_back(std::string(1, c));
  } else if (seq.none()) {
    error(n.expr->pos, "for loop over none");
  } else if (!seq.undefined()) {
    error(n.expr->pos, "for loop over a value that is not iterable");
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
  // loop.changed(value): whether value differs from the one of its previous call in this loop.
  auto last_seen = std::make_shared<std::optional<Value>>();
  auto changed = std::make_shared<Callable>(Callable{"loop.changed", [last_seen](Interpreter&, Arguments& a) {
                                                       Value now = Value::array(a.positional);
                                                       const bool differs = !*last_seen || !equal(**last_seen, now);
                                                       *last_seen = std::move(now);
                                                       return Value(differs);
                                                     }});
  for (size_t i = 0; i < items.size(); ++i) {
    bind(items[i]);
    Value loop = loop_object(n, items, i, depth);
    loop.set("changed", Value::function(changed));
    assign("loop", std::move(loop));
    try {
      run(n.body, out);
    } catch (const BreakSignal&) {
      break;
    } catch (const ContinueSignal&) {
      continue;
    } catch (...) {
      scopes_.pop_back();
      throw;
    }
  }
  if (items.empty()) run(n.else_body, out);
  scopes_.pop_back();
}

std::string render(const Source& src, const Body& body, Value globals, const ChatTemplateOptions& options) {
  RenderBudget budget(src);
  Interpreter interpreter(src, std::move(globals), budget, options);
  std::string out;
  interpreter.run(body, out);
  return out;
}

}  // namespace hfstatic::chat
