#include "chat/parser.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "util/error.h"

namespace hfstatic::chat {
namespace {

class Parser {
 public:
  Parser(const Source& src, std::vector<Token> toks) : src_(src), t_(std::move(toks)) {}

  Body parse_template() {
    Body body = parse_body({});
    if (peek().type != Tok::kEnd) src_.error(peek().pos, "unexpected block tag");
    return body;
  }

 private:
  const Source& src_;
  std::vector<Token> t_;
  size_t i_ = 0;
  // Depth of the node being parsed: parsing, rendering and freeing recurse once per level, so
  // a template nesting deeper than this is an error rather than a stack overflow.
  static constexpr int kMaxDepth = 200;
  int depth_ = 0;
  int loop_depth_ = 0;  // enclosing for loops of the current function (template, macro or caller)
  struct DepthScope {   // restores the depth when the function that went deeper returns
    Parser& p;
    int saved;
    explicit DepthScope(Parser& parser) : p(parser), saved(parser.depth_) {}
    ~DepthScope() { p.depth_ = saved; }
  };
  void deeper(size_t pos) {
    if (++depth_ > kMaxDepth) src_.error(pos, cat("expressions or blocks nest deeper than ", kMaxDepth, " levels"));
  }

  const Token& peek(size_t k = 0) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  const Token& next() { return t_[std::min(i_++, t_.size() - 1)]; }
  bool is_op(const char* op, size_t k = 0) const { return peek(k).type == Tok::kOp && peek(k).text == op; }
  bool is_name(const char* n, size_t k = 0) const { return peek(k).type == Tok::kName && peek(k).text == n; }
  void expect_op(const char* op) {
    if (!is_op(op)) src_.error(peek().pos, cat("expected '", op, "'", got()));
    ++i_;
  }
  void expect_name(const char* n) {
    if (!is_name(n)) src_.error(peek().pos, cat("expected '", n, "'", got()));
    ++i_;
  }
  void expect_close() {
    if (peek().type != Tok::kClose) src_.error(peek().pos, cat("expected end of tag", got()));
    ++i_;
  }
  std::string got() const {
    const Token& k = peek();
    if (k.type == Tok::kEnd) return " but reached the end of the template";
    if (k.type == Tok::kClose) return cat(" but found '", k.text, "'");
    return cat(" but found '", k.text, "'");
  }
  std::string name() {
    if (peek().type != Tok::kName) src_.error(peek().pos, cat("expected a name", got()));
    return next().text;
  }

  // Parses nodes until a {% tag %} whose keyword is in `stops` (left unconsumed, positioned at the keyword).
  Body parse_body(const std::vector<std::string>& stops) {
    Body body;
    for (;;) {
      const Token& tk = peek();
      if (tk.type == Tok::kEnd) {
        if (!stops.empty()) src_.error(tk.pos, cat("missing {% ", stops.back(), " %}"));
        return body;
      }
      if (tk.type == Tok::kText) {
        auto n = std::make_unique<Node>();
        n->kind = NodeKind::kText;
        n->text = tk.text;
        n->pos = tk.pos;
        body.push_back(std::move(n));
        ++i_;
      } else if (tk.type == Tok::kExprOpen) {
        ++i_;
        auto n = std::make_unique<Node>();
        n->kind = NodeKind::kOutput;
        n->pos = tk.pos;
        n->expr = parse_expr();
        expect_close();
        body.push_back(std::move(n));
      } else if (tk.type == Tok::kStmtOpen) {
        const Token& kw = peek(1);
        if (kw.type != Tok::kName) src_.error(kw.pos, "expected a statement keyword");
        if (std::find(stops.begin(), stops.end(), kw.text) != stops.end()) {
          ++i_;  // at keyword
          return body;
        }
        ++i_;
        body.push_back(parse_statement());
      } else {
        src_.error(tk.pos, "unexpected token");
      }
    }
  }

  NodePtr parse_statement() {
    DepthScope scope(*this);
    deeper(peek().pos);
    const Token kw = next();
    auto n = std::make_unique<Node>();
    n->pos = kw.pos;
    if (kw.text == "if") {
      parse_if(*n);
    } else if (kw.text == "for") {
      parse_for(*n);
    } else if (kw.text == "set") {
      parse_set(*n);
    } else if (kw.text == "break" || kw.text == "continue") {
      if (loop_depth_ == 0) src_.error(kw.pos, cat("'", kw.text, "' outside a for loop"));
      n->kind = kw.text == "break" ? NodeKind::kBreak : NodeKind::kContinue;
      expect_close();
    } else if (kw.text == "macro") {
      n->kind = NodeKind::kMacro;
      n->text = name();
      parse_params(*n);
      expect_close();
      n->body = parse_block_body("endmacro");
    } else if (kw.text == "call") {
      n->kind = NodeKind::kCallBlock;
      if (is_op("(")) parse_params(*n);
      n->expr = parse_expr();
      if (n->expr->kind != ExprKind::kCall) src_.error(n->expr->pos, "{% call %} needs a macro call");
      expect_close();
      n->body = parse_block_body("endcall");
    } else if (kw.text == "filter") {
      n->kind = NodeKind::kFilterBlock;
      n->filter = parse_filter_chain(kw.pos, false);
      expect_close();
      n->body = parse_nested_body("endfilter");
    } else if (kw.text == "generation") {  // transformers' extension: marks the assistant's text
      n->kind = NodeKind::kIf;
      expect_close();
      n->branches.emplace_back(nullptr, parse_nested_body("endgeneration"));
    } else {
      src_.error(kw.pos, cat("unsupported or unexpected statement '", kw.text, "'"));
    }
    return n;
  }

  // The body up to {% end %}, consumed with its tag.
  Body parse_nested_body(const char* end) {
    Body body = parse_body({end});
    next();
    expect_close();
    return body;
  }
  // A macro's or caller's body: a new function, where break and continue have no loop.
  Body parse_block_body(const char* end) {
    const int saved = loop_depth_;
    loop_depth_ = 0;
    Body body = parse_nested_body(end);
    loop_depth_ = saved;
    return body;
  }

  void parse_if(Node& n) {
    n.kind = NodeKind::kIf;
    ExprPtr cond = parse_expr();
    expect_close();
    for (;;) {
      Body b = parse_body({"elif", "else", "endif"});
      n.branches.emplace_back(std::move(cond), std::move(b));
      const std::string k = next().text;
      if (k == "elif") {
        cond = parse_expr();
        expect_close();
      } else if (k == "else") {
        expect_close();
        n.branches.emplace_back(nullptr, parse_nested_body("endif"));
        return;
      } else {
        expect_close();
        return;
      }
    }
  }

  void parse_for(Node& n) {
    n.kind = NodeKind::kFor;
    const bool parenthesised = is_op("(");
    if (parenthesised) ++i_;
    n.targets.push_back(name());
    while (is_op(",")) {
      ++i_;
      n.targets.push_back(name());
    }
    if (parenthesised) expect_op(")");
    expect_name("in");
    n.expr = parse_or_ternary(false);
    if (is_name("if")) {
      ++i_;
      n.filter = parse_or_ternary(false);
    }
    if (is_name("recursive")) {
      ++i_;
      n.recursive = true;
    }
    expect_close();
    ++loop_depth_;
    n.body = parse_body({"else", "endfor"});
    --loop_depth_;
    if (t_[i_ - 1].type == Tok::kStmtOpen && peek().text == "else") {
      next();
      expect_close();
      n.else_body = parse_body({"endfor"});
    }
    next();
    expect_close();
  }

  void parse_set(Node& n) {
    n.kind = NodeKind::kSet;
    n.targets.push_back(name());
    if (is_op(".")) {
      ++i_;
      n.attr = name();
    }
    while (is_op(",")) {
      ++i_;
      n.targets.push_back(name());
    }
    if (is_op("=")) {
      ++i_;
      n.expr = parse_expr();
      expect_close();
      return;
    }
    if (n.targets.size() != 1) src_.error(peek().pos, "a block assignment sets one name");
    n.kind = NodeKind::kSetBlock;
    if (is_op("|")) n.filter = parse_filter_chain(peek().pos, true);
    expect_close();
    n.body = parse_nested_body("endset");
  }

  // (a, b=default, ...) of a macro or a call block's caller.
  void parse_params(Node& n) {
    expect_op("(");
    while (!is_op(")")) {
      std::string param = name();
      ExprPtr default_value;
      if (is_op("=")) {
        ++i_;
        default_value = parse_expr();
      }
      n.params.emplace_back(std::move(param), std::move(default_value));
      if (!is_op(",")) break;
      ++i_;
    }
    expect_op(")");
  }

  // "f(args)|g|..." applied to the block's body (bound to kBlockBodyName); `leading_pipe` when
  // the chain starts with '|' (as after {% set x %}).
  ExprPtr parse_filter_chain(size_t pos, bool leading_pipe) {
    ExprPtr e = make(ExprKind::kName, pos);
    e->name = kBlockBodyName;
    for (bool first = true; first || is_op("|"); first = false) {
      if (!first || leading_pipe) expect_op("|");
      auto f = make(ExprKind::kFilter, peek().pos);
      f->name = name();
      f->a = std::move(e);
      if (is_op("(")) parse_call_args(*f);
      e = std::move(f);
    }
    return e;
  }

  ExprPtr make(ExprKind k, size_t pos) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->pos = pos;
    return e;
  }

 public:
  ExprPtr parse_expr() {
    DepthScope scope(*this);
    deeper(peek().pos);
    return parse_or_ternary(true);
  }

 private:
  ExprPtr parse_or_ternary(bool allow_ternary) {
    DepthScope scope(*this);
    ExprPtr e = parse_or();
    if (allow_ternary && is_name("if")) {
      const size_t pos = next().pos;
      deeper(pos);
      auto c = make(ExprKind::kCond, pos);
      c->b = std::move(e);  // value when true
      c->a = parse_or();    // condition
      if (is_name("else")) {
        ++i_;
        c->c = parse_or_ternary(true);
      }
      return c;
    }
    return e;
  }
  ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r, size_t pos) {
    auto e = make(ExprKind::kBinary, pos);
    e->name = op;
    e->a = std::move(l);
    e->b = std::move(r);
    return e;
  }
  ExprPtr parse_or() {
    DepthScope scope(*this);
    ExprPtr l = parse_and();
    while (is_name("or")) {
      const size_t pos = next().pos;
      deeper(pos);
      l = binary("or", std::move(l), parse_and(), pos);
    }
    return l;
  }
  ExprPtr parse_and() {
    DepthScope scope(*this);
    ExprPtr l = parse_not();
    while (is_name("and")) {
      const size_t pos = next().pos;
      deeper(pos);
      l = binary("and", std::move(l), parse_not(), pos);
    }
    return l;
  }
  ExprPtr parse_not() {
    DepthScope scope(*this);
    if (is_name("not")) {
      const size_t pos = next().pos;
      deeper(pos);
      auto e = make(ExprKind::kUnary, pos);
      e->name = "not";
      e->a = parse_not();
      return e;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    DepthScope scope(*this);
    ExprPtr l = parse_math1();
    for (;;) {
      const size_t pos = peek().pos;
      if (peek().type == Tok::kOp && (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
                                      peek().text == ">" || peek().text == "<=" || peek().text == ">=")) {
        const std::string op = next().text;
        deeper(pos);
        l = binary(op, std::move(l), parse_math1(), pos);
      } else if (is_name("in")) {
        ++i_;
        deeper(pos);
        l = binary("in", std::move(l), parse_math1(), pos);
      } else if (is_name("not") && is_name("in", 1)) {
        i_ += 2;
        deeper(pos);
        l = binary("not in", std::move(l), parse_math1(), pos);
      } else {
        return l;
      }
    }
  }
  ExprPtr parse_math1() {
    DepthScope scope(*this);
    ExprPtr l = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& op = next();
      deeper(op.pos);
      l = binary(op.text, std::move(l), parse_concat(), op.pos);
    }
    return l;
  }
  ExprPtr parse_concat() {
    DepthScope scope(*this);
    ExprPtr l = parse_math2();
    while (is_op("~")) {
      const size_t pos = next().pos;
      deeper(pos);
      l = binary("~", std::move(l), parse_math2(), pos);
    }
    return l;
  }
  ExprPtr parse_math2() {
    DepthScope scope(*this);
    ExprPtr l = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& op = next();
      deeper(op.pos);
      l = binary(op.text, std::move(l), parse_pow(), op.pos);
    }
    return l;
  }
  ExprPtr parse_pow() {
    DepthScope scope(*this);
    ExprPtr l = parse_unary();
    while (is_op("**")) {
      const size_t pos = next().pos;
      deeper(pos);
      l = binary("**", std::move(l), parse_unary(), pos);
    }
    return l;
  }
  ExprPtr parse_unary() {
    DepthScope scope(*this);
    if (is_op("-") || is_op("+")) {
      const Token& op = next();
      deeper(op.pos);
      auto e = make(ExprKind::kUnary, op.pos);
      e->name = op.text;
      e->a = parse_unary();
      return e;
    }
    ExprPtr e = parse_postfix(parse_primary());
    // Filters and tests.
    for (;;) {
      if (is_op("|")) {
        const size_t pos = next().pos;
        deeper(pos);
        auto f = make(ExprKind::kFilter, pos);
        f->name = name();
        f->a = std::move(e);
        if (is_op("(")) parse_call_args(*f);
        e = parse_postfix(std::move(f));
      } else if (is_name("is")) {
        const size_t pos = next().pos;
        deeper(pos);
        auto t = make(ExprKind::kTest, pos);
        if (is_name("not")) {
          ++i_;
          t->negate = true;
        }
        if (peek().type == Tok::kName) {
          t->name = next().text;
        } else {
          src_.error(peek().pos, cat("expected a test name after 'is'", got()));
        }
        t->a = std::move(e);
        if (is_op("(")) {
          parse_call_args(*t);
        } else if (peek().type == Tok::kString || peek().type == Tok::kInt || peek().type == Tok::kFloat ||
                   is_op("[") || is_op("{") ||
                   (peek().type == Tok::kName && !is_name("else") && !is_name("or") && !is_name("and") &&
                    !is_name("is"))) {
          t->args.push_back(parse_postfix(parse_primary()));  // as Jinja2: `x is in [1, 2]`, `x is eq y`
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }
  void parse_call_args(Expr& call) {
    expect_op("(");
    while (!is_op(")")) {
      if (is_op("*") || is_op("**")) {  // f(*list, **mapping): kept in b and c
        const bool mapping = next().text == "**";
        (mapping ? call.c : call.b) = parse_expr();
      } else if (peek().type == Tok::kName && is_op("=", 1)) {
        std::string k = next().text;
        ++i_;
        call.kwargs.emplace_back(k, parse_expr());
      } else {
        call.args.push_back(parse_expr());
      }
      if (!is_op(",")) break;
      ++i_;
    }
    expect_op(")");
  }
  ExprPtr parse_postfix(ExprPtr e) {
    DepthScope scope(*this);
    for (;;) {
      deeper(peek().pos);
      if (is_op(".")) {
        const size_t pos = next().pos;
        auto a = make(ExprKind::kAttr, pos);
        a->name = name();
        a->a = std::move(e);
        e = std::move(a);
      } else if (is_op("[")) {
        const size_t pos = next().pos;
        ExprPtr lo, hi, step;
        bool slice = false;
        if (!is_op(":")) lo = parse_expr();
        if (is_op(":")) {
          slice = true;
          ++i_;
          if (!is_op(":") && !is_op("]")) hi = parse_expr();
          if (is_op(":")) {
            ++i_;
            if (!is_op("]")) step = parse_expr();
          }
        }
        expect_op("]");
        auto x = make(slice ? ExprKind::kSlice : ExprKind::kIndex, pos);
        x->a = std::move(e);
        if (slice) {
          x->b = std::move(lo);
          x->c = std::move(hi);
          x->args.push_back(std::move(step));
        } else {
          x->b = std::move(lo);
        }
        e = std::move(x);
      } else if (is_op("(")) {
        auto c = make(ExprKind::kCall, e->pos);
        c->a = std::move(e);
        parse_call_args(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }
  ExprPtr parse_primary() {
    const Token& tk = next();
    switch (tk.type) {
      case Tok::kString: {
        auto e = make(ExprKind::kLiteral, tk.pos);
        std::string s = tk.text;
        while (peek().type == Tok::kString) s += next().text;  // adjacent literals concatenate
        e->literal = Value(s);
        return e;
      }
      case Tok::kInt: {
        auto e = make(ExprKind::kLiteral, tk.pos);
        int64_t v = 0;
        auto [end, ec] = std::from_chars(tk.text.data(), tk.text.data() + tk.text.size(), v);
        if (ec != std::errc() || end != tk.text.data() + tk.text.size())
          src_.error(tk.pos, cat("integer literal ", tk.text, " is out of range"));
        e->literal = Value(v);
        return e;
      }
      case Tok::kFloat: {
        auto e = make(ExprKind::kLiteral, tk.pos);
        e->literal = Value(std::strtod(tk.text.c_str(), nullptr));  // overflow gives inf, as in Python
        return e;
      }
      case Tok::kName: {
        auto e = make(ExprKind::kLiteral, tk.pos);
        if (tk.text == "true" || tk.text == "True")
          e->literal = Value(true);
        else if (tk.text == "false" || tk.text == "False")
          e->literal = Value(false);
        else if (tk.text == "none" || tk.text == "None")
          e->literal = Value(None{});
        else {
          e->kind = ExprKind::kName;
          e->name = tk.text;
        }
        return e;
      }
      case Tok::kOp:
        if (tk.text == "(") {
          ExprPtr e = parse_expr();
          if (is_op(",")) {  // tuple -> list
            auto l = make(ExprKind::kList, tk.pos);
            l->args.push_back(std::move(e));
            while (is_op(",")) {
              ++i_;
              if (is_op(")")) break;
              l->args.push_back(parse_expr());
            }
            e = std::move(l);
          }
          expect_op(")");
          return e;
        }
        if (tk.text == "[") {
          auto l = make(ExprKind::kList, tk.pos);
          while (!is_op("]")) {
            l->args.push_back(parse_expr());
            if (!is_op(",")) break;
            ++i_;
          }
          expect_op("]");
          return l;
        }
        if (tk.text == "{") {
          auto d = make(ExprKind::kDict, tk.pos);
          while (!is_op("}")) {
            ExprPtr k = parse_expr();
            expect_op(":");
            d->items.emplace_back(std::move(k), parse_expr());
            if (!is_op(",")) break;
            ++i_;
          }
          expect_op("}");
          return d;
        }
        break;
      default: break;
    }
    if (tk.type == Tok::kEnd) src_.error(tk.pos, "unexpected end of template in an expression");
    src_.error(tk.pos, cat("unexpected '", tk.text, "' in an expression"));
  }
};

}  // namespace

Body parse_template(const Source& src, std::vector<Token> tokens) {
  Parser parser(src, std::move(tokens));
  return parser.parse_template();
}

}  // namespace hfstatic::chat
