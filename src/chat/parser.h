// Parser of the chat-template language into a tree of statements (Node) and expressions (Expr).
// Nesting is limited (kMaxDepth) so that parsing, rendering and freeing never overflow the stack.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/lexer.h"
#include "chat/value.h"

namespace hfstatic::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
enum class ExprKind {
  kLiteral,
  kName,
  kList,
  kDict,
  kAttr,
  kIndex,
  kSlice,
  kCall,
  kFilter,
  kTest,
  kUnary,
  kBinary,
  kCond
};

struct Expr {
  ExprKind kind;
  size_t pos = 0;
  Value literal;
  std::string name;  // Name, Attr, Filter, Test, op
  ExprPtr a, b, c;   // operands (object, index, slice parts, condition, a call's *args and **kwargs...)
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::pair<ExprPtr, ExprPtr>> items;  // dict literal
  bool negate = false;                             // "is not"
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;
enum class NodeKind {
  kText,
  kOutput,
  kIf,
  kFor,
  kSet,
  kBreak,
  kContinue,
  kMacro,        // {% macro name(params) %}: text is the name
  kCallBlock,    // {% call(params) expr %}: expr is the macro call, body is `caller`
  kSetBlock,     // {% set name %}...{% endset %}, optional filter
  kFilterBlock,  // {% filter f(args)|g %}...{% endfilter %}
};

// The name under which a block's rendered body is bound while its filter chain is evaluated:
// not an identifier, so no template can read it.
inline constexpr const char* kBlockBodyName = " body";

struct Node {
  NodeKind kind;
  size_t pos = 0;
  std::string text;
  ExprPtr expr;                                         // Output value, Set value, For iterable
  std::vector<std::pair<ExprPtr, Body>> branches;       // If: (cond or null for else, body)
  std::vector<std::string> targets;                     // For loop vars / Set target
  std::string attr;                                     // Set ns.attr
  ExprPtr filter;                                       // For ... if filter; SetBlock/FilterBlock chain
  std::vector<std::pair<std::string, ExprPtr>> params;  // Macro / CallBlock: names and defaults
  bool recursive = false;                               // For ... recursive
  Body body, else_body;
};

// Parses the whole template; throws Error ("chat template line L col C: ...") on syntax errors.
Body parse_template(const Source& src, std::vector<Token> tokens);

}  // namespace hfstatic::chat
