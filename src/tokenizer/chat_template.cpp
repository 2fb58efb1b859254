#include "tokenizer/chat_template.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <variant>
#include <vector>

#include "util/error.h"

namespace hfstatic {
namespace {

// ---------------------------------------------------------------------------------------------
// Values

struct Value;
using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;  // insertion-ordered
struct Undefined {};
struct None {};

struct Value {
  std::variant<Undefined, None, bool, int64_t, double, std::string, std::shared_ptr<Array>, std::shared_ptr<Object>> v;
  bool is_namespace = false;

  Value() = default;
  Value(None) : v(None{}) {}
  Value(bool b) : v(b) {}
  Value(int64_t i) : v(i) {}
  Value(int i) : v(static_cast<int64_t>(i)) {}
  Value(size_t i) : v(static_cast<int64_t>(i)) {}
  Value(double d) : v(d) {}
  Value(std::string s) : v(std::move(s)) {}
  Value(const char* s) : v(std::string(s)) {}
  static Value array(Array a = {}) { Value r; r.v = std::make_shared<Array>(std::move(a)); return r; }
  static Value object(Object o = {}) { Value r; r.v = std::make_shared<Object>(std::move(o)); return r; }

  bool undefined() const { return std::holds_alternative<Undefined>(v); }
  bool none() const { return std::holds_alternative<None>(v); }
  bool is_bool() const { return std::holds_alternative<bool>(v); }
  bool is_int() const { return std::holds_alternative<int64_t>(v); }
  bool is_float() const { return std::holds_alternative<double>(v); }
  bool is_number() const { return is_int() || is_float(); }
  bool is_string() const { return std::holds_alternative<std::string>(v); }
  bool is_array() const { return std::holds_alternative<std::shared_ptr<Array>>(v); }
  bool is_object() const { return std::holds_alternative<std::shared_ptr<Object>>(v); }
  const std::string& str() const { return std::get<std::string>(v); }
  Array& arr() const { return *std::get<std::shared_ptr<Array>>(v); }
  Object& obj() const { return *std::get<std::shared_ptr<Object>>(v); }
  double num() const { return is_int() ? static_cast<double>(std::get<int64_t>(v)) : is_bool() ? (std::get<bool>(v) ? 1.0 : 0.0) : std::get<double>(v); }
  int64_t integer() const { return is_int() ? std::get<int64_t>(v) : is_bool() ? (std::get<bool>(v) ? 1 : 0) : static_cast<int64_t>(std::get<double>(v)); }

  const Value* find(const std::string& key) const {
    if (!is_object()) return nullptr;
    for (auto& kv : obj())
      if (kv.first == key) return &kv.second;
    return nullptr;
  }
  void set(const std::string& key, Value val) const {
    for (auto& kv : obj())
      if (kv.first == key) { kv.second = std::move(val); return; }
    obj().emplace_back(key, std::move(val));
  }
};

bool truthy(const Value& v) {
  if (v.undefined() || v.none()) return false;
  if (v.is_bool()) return std::get<bool>(v.v);
  if (v.is_int()) return std::get<int64_t>(v.v) != 0;
  if (v.is_float()) return std::get<double>(v.v) != 0.0;
  if (v.is_string()) return !v.str().empty();
  if (v.is_array()) return !v.arr().empty();
  return !v.obj().empty();
}

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.num() == b.num();
  if (a.is_bool() && b.is_bool()) return std::get<bool>(a.v) == std::get<bool>(b.v);
  if (a.is_string() && b.is_string()) return a.str() == b.str();
  if (a.none() && b.none()) return true;
  if (a.undefined() && b.undefined()) return true;
  if (a.is_array() && b.is_array()) {
    if (a.arr().size() != b.arr().size()) return false;
    for (size_t i = 0; i < a.arr().size(); ++i)
      if (!equal(a.arr()[i], b.arr()[i])) return false;
    return true;
  }
  if (a.is_object() && b.is_object()) {
    if (a.obj().size() != b.obj().size()) return false;
    for (const auto& kv : a.obj()) {
      const Value* o = b.find(kv.first);
      if (!o || !equal(kv.second, *o)) return false;
    }
    return true;
  }
  return false;
}

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value(None{});
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
    case nlohmann::ordered_json::value_t::number_unsigned: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Array a;
      for (const auto& e : j) a.push_back(from_json(e));
      return Value::array(std::move(a));
    }
    case nlohmann::ordered_json::value_t::object: {
      Object o;
      for (auto it = j.begin(); it != j.end(); ++it) o.emplace_back(it.key(), from_json(it.value()));
      return Value::object(std::move(o));
    }
    default: return Value();
  }
}

std::string format_float(double d) {
  if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e16) {
    return cat(static_cast<int64_t>(d), ".0");
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", d);
  // Shortest representation that round-trips.
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  return buf;
}

std::string json_escape(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string to_json(const Value& v, int indent, int depth) {
  auto nl = [&](int d) { return indent < 0 ? std::string() : "\n" + std::string(static_cast<size_t>(indent * d), ' '); };
  if (v.undefined() || v.none()) return "null";
  if (v.is_bool()) return std::get<bool>(v.v) ? "true" : "false";
  if (v.is_int()) return std::to_string(std::get<int64_t>(v.v));
  if (v.is_float()) return nlohmann::json(std::get<double>(v.v)).dump();
  if (v.is_string()) return json_escape(v.str());
  const std::string sep = indent < 0 ? ", " : ",";
  if (v.is_array()) {
    if (v.arr().empty()) return "[]";
    std::string out = "[";
    for (size_t i = 0; i < v.arr().size(); ++i) {
      if (i) out += sep;
      out += nl(depth + 1) + to_json(v.arr()[i], indent, depth + 1);
    }
    return out + nl(depth) + "]";
  }
  if (v.obj().empty()) return "{}";
  std::string out = "{";
  bool first = true;
  for (const auto& kv : v.obj()) {
    if (!first) out += sep;
    first = false;
    out += nl(depth + 1) + json_escape(kv.first) + ": " + to_json(kv.second, indent, depth + 1);
  }
  return out + nl(depth) + "}";
}

std::string repr(const Value& v);

std::string to_string(const Value& v) {
  if (v.undefined()) return "";
  if (v.none()) return "None";
  if (v.is_bool()) return std::get<bool>(v.v) ? "True" : "False";
  if (v.is_int()) return std::to_string(std::get<int64_t>(v.v));
  if (v.is_float()) return format_float(std::get<double>(v.v));
  if (v.is_string()) return v.str();
  return repr(v);
}

std::string repr(const Value& v) {
  if (v.is_string()) {
    std::string out = "'";
    for (char c : v.str()) {
      if (c == '\'') out += "\\'";
      else if (c == '\\') out += "\\\\";
      else if (c == '\n') out += "\\n";
      else out += c;
    }
    return out + "'";
  }
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.arr().size(); ++i) out += (i ? ", " : "") + repr(v.arr()[i]);
    return out + "]";
  }
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& kv : v.obj()) {
      out += (first ? "" : ", ") + repr(Value(kv.first)) + ": " + repr(kv.second);
      first = false;
    }
    return out + "}";
  }
  return to_string(v);
}

// ---------------------------------------------------------------------------------------------
// Lexer

enum class Tok { kText, kExprOpen, kStmtOpen, kClose, kName, kString, kInt, kFloat, kOp, kEnd };

struct Token {
  Tok type;
  std::string text;
  size_t pos;
};

struct Source {
  const std::string& text;
  std::string where(size_t pos) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos && i < text.size(); ++i) {
      if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
    }
    return cat("chat template line ", line, " col ", col);
  }
  [[noreturn]] void error(size_t pos, const std::string& msg) const { fail(where(pos), ": ", msg); }
};

std::vector<Token> lex(const Source& src) {
  const std::string& s = src.text;
  std::vector<Token> out;
  size_t i = 0;
  bool strip_next = false;   // '-' on the previous closing tag
  bool trim_newline = false; // trim_blocks after a block / comment tag
  while (i < s.size()) {
    // Text up to the next tag opener.
    size_t open = s.find('{', i);
    while (open != std::string::npos && open + 1 < s.size() && s[open + 1] != '{' && s[open + 1] != '%' && s[open + 1] != '#')
      open = s.find('{', open + 1);
    if (open != std::string::npos && open + 1 >= s.size()) open = std::string::npos;
    std::string text = s.substr(i, (open == std::string::npos ? s.size() : open) - i);
    if (trim_newline && !text.empty() && text[0] == '\n') text.erase(0, 1);
    if (strip_next) {
      size_t k = 0;
      while (k < text.size() && std::isspace(static_cast<unsigned char>(text[k]))) ++k;
      text.erase(0, k);
    }
    strip_next = trim_newline = false;
    if (open == std::string::npos) {
      if (!text.empty()) out.push_back({Tok::kText, text, i});
      break;
    }
    const char kind = s[open + 1];
    const bool minus = open + 2 < s.size() && s[open + 2] == '-';
    const bool plus = open + 2 < s.size() && s[open + 2] == '+';
    if (minus) {
      size_t k = text.size();
      while (k > 0 && std::isspace(static_cast<unsigned char>(text[k - 1]))) --k;
      text.resize(k);
    } else if (kind != '{' && !plus) {
      // lstrip_blocks: drop spaces and tabs between the line start and a block/comment tag.
      size_t q = open;
      while (q > i && (s[q - 1] == ' ' || s[q - 1] == '\t')) --q;
      if (q == 0 || s[q - 1] == '\n') text.resize(text.size() >= open - q ? text.size() - (open - q) : 0);
    }
    if (!text.empty()) out.push_back({Tok::kText, text, i});
    size_t p = open + 2 + ((minus || plus) ? 1 : 0);
    if (kind == '#') {
      const size_t close = s.find("#}", p);
      if (close == std::string::npos) src.error(open, "unterminated comment");
      strip_next = close > 0 && s[close - 1] == '-';
      trim_newline = true;
      i = close + 2;
      continue;
    }
    out.push_back({kind == '{' ? Tok::kExprOpen : Tok::kStmtOpen, "", open});
    const std::string closer = kind == '{' ? "}}" : "%}";
    // Expression tokens up to the closer.
    for (;;) {
      while (p < s.size() && std::isspace(static_cast<unsigned char>(s[p]))) ++p;
      if (p >= s.size()) src.error(open, "unterminated tag");
      if (s[p] == '-' && s.compare(p + 1, 2, closer) == 0) {
        strip_next = true;
        p += 1;
      }
      if (s.compare(p, 2, closer) == 0) {
        out.push_back({Tok::kClose, closer, p});
        p += 2;
        if (kind == '%') trim_newline = true;
        break;
      }
      const char c = s[p];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t e = p;
        while (e < s.size() && (std::isalnum(static_cast<unsigned char>(s[e])) || s[e] == '_')) ++e;
        out.push_back({Tok::kName, s.substr(p, e - p), p});
        p = e;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        size_t e = p;
        while (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) ++e;
        bool is_float = false;
        if (e + 1 < s.size() && s[e] == '.' && std::isdigit(static_cast<unsigned char>(s[e + 1]))) {
          is_float = true;
          ++e;
          while (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) ++e;
        }
        out.push_back({is_float ? Tok::kFloat : Tok::kInt, s.substr(p, e - p), p});
        p = e;
      } else if (c == '\'' || c == '"') {
        std::string val;
        size_t e = p + 1;
        while (e < s.size() && s[e] != c) {
          if (s[e] == '\\' && e + 1 < s.size()) {
            const char n = s[++e];
            switch (n) {
              case 'n': val += '\n'; break;
              case 't': val += '\t'; break;
              case 'r': val += '\r'; break;
              case 'b': val += '\b'; break;
              case 'f': val += '\f'; break;
              case '\\': val += '\\'; break;
              case '\'': val += '\''; break;
              case '"': val += '"'; break;
              default: val += '\\'; val += n; break;
            }
            ++e;
          } else {
            val += s[e++];
          }
        }
        if (e >= s.size()) src.error(p, "unterminated string literal");
        out.push_back({Tok::kString, val, p});
        p = e + 1;
      } else {
        static const char* kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                     "(", ")", "[", "]", "{", "}", ",", ".", ":", "|", "="};
        bool found = false;
        for (const char* op : kOps) {
          const size_t n = std::char_traits<char>::length(op);
          if (s.compare(p, n, op) == 0) {
            out.push_back({Tok::kOp, op, p});
            p += n;
            found = true;
            break;
          }
        }
        if (!found) src.error(p, cat("unexpected character '", c, "'"));
      }
    }
    i = p;
  }
  out.push_back({Tok::kEnd, "", s.size()});
  return out;
}

// ---------------------------------------------------------------------------------------------
// AST

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
enum class ExprKind { kLiteral, kName, kList, kDict, kAttr, kIndex, kSlice, kCall, kFilter, kTest, kUnary, kBinary, kCond };

struct Expr {
  ExprKind kind;
  size_t pos = 0;
  Value literal;
  std::string name;        // Name, Attr, Filter, Test, op
  ExprPtr a, b, c;         // operands (object, index, slice parts, condition...)
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::pair<ExprPtr, ExprPtr>> items;  // dict literal
  bool negate = false;     // "is not"
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;
enum class NodeKind { kText, kOutput, kIf, kFor, kSet, kBreak, kContinue };

struct Node {
  NodeKind kind;
  size_t pos = 0;
  std::string text;
  ExprPtr expr;                                  // Output value, Set value, For iterable
  std::vector<std::pair<ExprPtr, Body>> branches;  // If: (cond or null for else, body)
  std::vector<std::string> targets;              // For loop vars / Set target
  std::string attr;                              // Set ns.attr
  ExprPtr filter;                                // For ... if filter
  Body body, else_body;
};

// ---------------------------------------------------------------------------------------------
// Parser

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
  struct DepthScope {  // restores the depth when the function that went deeper returns
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
      n->kind = NodeKind::kIf;
      ExprPtr cond = parse_expr();
      expect_close();
      for (;;) {
        Body b = parse_body({"elif", "else", "endif"});
        n->branches.emplace_back(std::move(cond), std::move(b));
        const std::string k = next().text;
        if (k == "elif") {
          cond = parse_expr();
          expect_close();
        } else if (k == "else") {
          expect_close();
          Body eb = parse_body({"endif"});
          n->branches.emplace_back(nullptr, std::move(eb));
          next();
          expect_close();
          break;
        } else {
          expect_close();
          break;
        }
      }
    } else if (kw.text == "for") {
      n->kind = NodeKind::kFor;
      n->targets.push_back(name());
      while (is_op(",")) {
        ++i_;
        n->targets.push_back(name());
      }
      expect_name("in");
      n->expr = parse_or_ternary(false);
      if (is_name("if")) {
        ++i_;
        n->filter = parse_or_ternary(false);
      }
      if (is_name("recursive")) src_.error(peek().pos, "recursive loops are not supported");
      expect_close();
      n->body = parse_body({"else", "endfor"});
      if (t_[i_ - 1].type == Tok::kStmtOpen && peek().text == "else") {
        next();
        expect_close();
        n->else_body = parse_body({"endfor"});
      }
      next();
      expect_close();
    } else if (kw.text == "set") {
      n->kind = NodeKind::kSet;
      n->targets.push_back(name());
      if (is_op(".")) {
        ++i_;
        n->attr = name();
      }
      while (is_op(",")) {
        ++i_;
        n->targets.push_back(name());
      }
      if (!is_op("=")) src_.error(peek().pos, "block assignments ({% set x %}...{% endset %}) are not supported");
      ++i_;
      n->expr = parse_expr();
      expect_close();
    } else if (kw.text == "break" || kw.text == "continue") {
      n->kind = kw.text == "break" ? NodeKind::kBreak : NodeKind::kContinue;
      expect_close();
    } else {
      src_.error(kw.pos, cat("unsupported or unexpected statement '", kw.text, "'"));
    }
    return n;
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
                   (peek().type == Tok::kName && (peek().text == "none" || peek().text == "None" ||
                                                  peek().text == "true" || peek().text == "false"))) {
          t->args.push_back(parse_primary());
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
      if (peek().type == Tok::kName && is_op("=", 1)) {
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
        if (tk.text == "true" || tk.text == "True") e->literal = Value(true);
        else if (tk.text == "false" || tk.text == "False") e->literal = Value(false);
        else if (tk.text == "none" || tk.text == "None") e->literal = Value(None{});
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
      default:
        break;
    }
    if (tk.type == Tok::kEnd) src_.error(tk.pos, "unexpected end of template in an expression");
    src_.error(tk.pos, cat("unexpected '", tk.text, "' in an expression"));
  }
};

// ---------------------------------------------------------------------------------------------
// Evaluation

struct BreakSignal {};
struct ContinueSignal {};

class Interpreter {
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
  Value kwarg(const Expr& e, const char* name) {
    for (const auto& [k, v] : e.kwargs)
      if (k == name) return eval(*v);
    return Value();
  }

  static std::string strip_chars(const std::string& s, const Value& chars, bool left, bool right) {
    auto in_set = [&](char c) {
      if (chars.is_string()) return chars.str().find(c) != std::string::npos;
      return std::isspace(static_cast<unsigned char>(c)) != 0;
    };
    size_t b = 0, e = s.size();
    if (left) while (b < e && in_set(s[b])) ++b;
    if (right) while (e > b && in_set(s[e - 1])) --e;
    return s.substr(b, e - b);
  }

  Value call(const Expr& e) {
    // Methods: obj.method(args)
    if (e.a->kind == ExprKind::kAttr) {
      Value obj = eval(*e.a->a);
      const std::string& m = e.a->name;
      std::vector<Value> args = eval_args(e);
      static const Value kMissing;
      // A reference into args (or to kMissing): callers keep references to the strings inside.
      auto arg = [&](size_t k) -> const Value& { return k < args.size() ? args[k] : kMissing; };
      if (obj.is_string()) {
        const std::string& s = obj.str();
        if (m == "strip") return Value(strip_chars(s, arg(0), true, true));
        if (m == "lstrip") return Value(strip_chars(s, arg(0), true, false));
        if (m == "rstrip") return Value(strip_chars(s, arg(0), false, true));
        if (m == "upper" || m == "lower") {
          std::string r = s;
          for (auto& c : r) c = static_cast<char>(m == "upper" ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
          return Value(r);
        }
        if (m == "startswith" || m == "endswith") {
          if (!arg(0).is_string()) error(e.pos, cat(m, "() needs a string argument"));
          const std::string& p = arg(0).str();
          const bool r = p.size() <= s.size() &&
                         (m == "startswith" ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0);
          return Value(r);
        }
        if (m == "split") {
          Array parts;
          if (arg(0).is_string()) {
            const std::string& sep = arg(0).str();
            if (sep.empty()) error(e.pos, "split() separator is empty");
            int64_t maxsplit = arg(1).is_int() ? arg(1).integer() : -1;
            size_t pos = 0;
            for (size_t hit; maxsplit != 0 && (hit = s.find(sep, pos)) != std::string::npos; pos = hit + sep.size(), --maxsplit)
              parts.emplace_back(s.substr(pos, hit - pos));
            parts.emplace_back(s.substr(pos));
          } else {
            size_t i = 0;
            while (i < s.size()) {
              while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
              size_t j = i;
              while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
              if (j > i) parts.emplace_back(s.substr(i, j - i));
              i = j;
            }
          }
          return Value::array(std::move(parts));
        }
        if (m == "replace") {
          if (!arg(0).is_string() || !arg(1).is_string()) error(e.pos, "replace() needs two strings");
          std::string r;
          const std::string& from = arg(0).str();
          if (from.empty()) return obj;
          size_t pos = 0;
          for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) r += s.substr(pos, hit - pos) + arg(1).str();
          return Value(r + s.substr(pos));
        }
        if (m == "title" || m == "capitalize") return apply_case(s, m);
        if (m == "find") return Value(arg(0).is_string() ? static_cast<int64_t>(s.find(arg(0).str()) == std::string::npos ? -1 : static_cast<int64_t>(s.find(arg(0).str()))) : int64_t{-1});
        error(e.pos, cat("unknown string method '", m, "'"));
      }
      if (obj.is_object() && !obj.find(m)) {
        if (m == "items") {
          Array a;
          for (const auto& kv : obj.obj()) a.push_back(Value::array({Value(kv.first), kv.second}));
          return Value::array(std::move(a));
        }
        if (m == "keys" || m == "values") {
          Array a;
          for (const auto& kv : obj.obj()) a.push_back(m == "keys" ? Value(kv.first) : kv.second);
          return Value::array(std::move(a));
        }
        if (m == "get") {
          if (const Value* v = obj.find(to_string(arg(0)))) return *v;
          return args.size() > 1 ? args[1] : Value(None{});
        }
        error(e.pos, cat("unknown mapping method '", m, "'"));
      }
      if (obj.is_array()) {
        if (m == "append") {
          obj.arr().push_back(arg(0));
          return Value(None{});
        }
        error(e.pos, cat("unknown list method '", m, "'"));
      }
    }
    if (e.a->kind == ExprKind::kName) {
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
    error(e.pos, "this expression cannot be called");
  }

  static Value apply_case(const std::string& s, const std::string& m) {
    std::string r = s;
    bool start = true;
    for (auto& c : r) {
      const auto uc = static_cast<unsigned char>(c);
      if (m == "title") {
        c = static_cast<char>(start ? std::toupper(uc) : std::tolower(uc));
        start = !std::isalnum(uc);
      } else {
        c = static_cast<char>(start ? std::toupper(uc) : std::tolower(uc));
        start = false;
      }
    }
    return Value(r);
  }

  Value filter(const Expr& e) {
    Value v = eval(*e.a);
    const std::string& f = e.name;
    std::vector<Value> args = eval_args(e);
    static const Value kMissing;
      // A reference into args (or to kMissing): callers keep references to the strings inside.
      auto arg = [&](size_t k) -> const Value& { return k < args.size() ? args[k] : kMissing; };
    if (f == "trim") {
      if (!v.is_string()) v = Value(to_string(v));
      return Value(strip_chars(v.str(), arg(0), true, true));
    }
    if (f == "length" || f == "count") {
      if (v.is_string()) {
        int64_t n = 0;  // code points
        for (unsigned char c : v.str()) n += (c & 0xC0) != 0x80;
        return Value(n);
      }
      if (v.is_array()) return Value(v.arr().size());
      if (v.is_object()) return Value(v.obj().size());
      error(e.pos, "length of a value without length");
    }
    if (f == "tojson") {
      Value indent = kwarg(e, "indent");
      if (indent.undefined()) indent = arg(0);
      return Value(to_json(v, indent.is_int() ? static_cast<int>(indent.integer()) : -1, 0));
    }
    if (f == "string") return Value(to_string(v));
    if (f == "safe" || f == "e" || f == "escape") return v;
    if (f == "upper" || f == "lower") {
      std::string r = to_string(v);
      for (auto& c : r) c = static_cast<char>(f == "upper" ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
      return Value(r);
    }
    if (f == "title" || f == "capitalize") return apply_case(to_string(v), f);
    if (f == "int") return v.is_string() ? Value(static_cast<int64_t>(std::strtoll(v.str().c_str(), nullptr, 10))) : Value(v.integer());
    if (f == "float") return v.is_string() ? Value(std::strtod(v.str().c_str(), nullptr)) : Value(v.num());
    if (f == "abs") return v.is_int() ? Value(static_cast<int64_t>(std::llabs(v.integer()))) : Value(std::fabs(v.num()));
    if (f == "default" || f == "d") {
      const bool boolean = arg(1).is_bool() && std::get<bool>(arg(1).v);
      if (v.undefined() || (boolean && !truthy(v))) return arg(0);
      return v;
    }
    if (f == "list") {
      if (v.is_array()) return v;
      Array a;
      if (v.is_string()) for (char c : v.str()) a.emplace_back(std::string(1, c));
      else if (v.is_object()) for (const auto& kv : v.obj()) a.emplace_back(kv.first);
      return Value::array(std::move(a));
    }
    if (f == "first" || f == "last") {
      if (v.is_array()) return v.arr().empty() ? Value() : (f == "first" ? v.arr().front() : v.arr().back());
      if (v.is_string()) return v.str().empty() ? Value() : Value(std::string(1, f == "first" ? v.str().front() : v.str().back()));
      error(e.pos, cat("'", f, "' of a value that is not a list"));
    }
    if (f == "reverse") {
      if (v.is_string()) return Value(std::string(v.str().rbegin(), v.str().rend()));
      if (v.is_array()) {
        Array a(v.arr().rbegin(), v.arr().rend());
        return Value::array(std::move(a));
      }
      error(e.pos, "reverse of a value that is not a list or string");
    }
    if (f == "join") {
      if (!v.is_array()) error(e.pos, "join of a value that is not a list");
      std::string sep = arg(0).is_string() ? arg(0).str() : "";
      std::string r;
      for (size_t i = 0; i < v.arr().size(); ++i) r += (i ? sep : "") + to_string(v.arr()[i]);
      return Value(r);
    }
    if (f == "replace") {
      std::string s = to_string(v);
      if (!arg(0).is_string() || !arg(1).is_string()) error(e.pos, "replace needs two strings");
      const std::string& from = arg(0).str();
      if (from.empty()) return Value(s);
      std::string r;
      size_t pos = 0;
      for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) r += s.substr(pos, hit - pos) + arg(1).str();
      return Value(r + s.substr(pos));
    }
    if (f == "items") {
      if (!v.is_object()) error(e.pos, "items of a value that is not a mapping");
      Array a;
      for (const auto& kv : v.obj()) a.push_back(Value::array({Value(kv.first), kv.second}));
      return Value::array(std::move(a));
    }
    if (f == "selectattr" || f == "rejectattr" || f == "select" || f == "reject") {
      if (!v.is_array()) error(e.pos, cat(f, " of a value that is not a list"));
      const bool attr = f == "selectattr" || f == "rejectattr";
      const bool keep_true = f == "selectattr" || f == "select";
      const size_t ti = attr ? 1 : 0;
      Array out;
      for (const auto& item : v.arr()) {
        Value subject = item;
        if (attr) {
          const Value* p = item.find(to_string(arg(0)));
          subject = p ? *p : Value();
        }
        bool r;
        if (args.size() > ti) {
          std::vector<Value> targs(args.begin() + static_cast<std::ptrdiff_t>(ti + 1), args.end());
          r = run_test(to_string(args[ti]), subject, targs, e.pos);
        } else {
          r = truthy(subject);
        }
        if (r == keep_true) out.push_back(item);
      }
      return Value::array(std::move(out));
    }
    if (f == "map") {
      if (!v.is_array()) error(e.pos, "map of a value that is not a list");
      Value attribute = kwarg(e, "attribute");
      Array out;
      for (const auto& item : v.arr()) {
        if (attribute.is_string()) {
          const Value* p = item.find(attribute.str());
          out.push_back(p ? *p : kwarg(e, "default"));
        } else if (arg(0).is_string()) {
          Expr fake;
          fake.kind = ExprKind::kFilter;
          fake.name = arg(0).str();
          fake.pos = e.pos;
          auto lit = std::make_unique<Expr>();
          lit->kind = ExprKind::kLiteral;
          lit->literal = item;
          fake.a = std::move(lit);
          out.push_back(filter(fake));
        }
      }
      return Value::array(std::move(out));
    }
    if (f == "unique") {
      if (!v.is_array()) error(e.pos, "unique of a value that is not a list");
      Array out;
      for (const auto& item : v.arr())
        if (std::none_of(out.begin(), out.end(), [&](const Value& o) { return equal(o, item); })) out.push_back(item);
      return Value::array(std::move(out));
    }
    if (f == "indent") {
      const int64_t width = arg(0).is_int() ? arg(0).integer() : 4;
      const bool first = arg(1).is_bool() && std::get<bool>(arg(1).v);
      const std::string pad(static_cast<size_t>(width), ' ');
      std::string s = to_string(v), r;
      for (size_t i = 0; i < s.size(); ++i) {
        r += s[i];
        if (s[i] == '\n' && i + 1 < s.size() && s[i + 1] != '\n') r += pad;
      }
      return Value(first ? pad + r : r);
    }
    error(e.pos, cat("unknown filter '", f, "'"));
  }

  bool run_test(const std::string& t, const Value& v, const std::vector<Value>& args, size_t pos) {
    if (t == "defined") return !v.undefined();
    if (t == "undefined") return v.undefined();
    if (t == "none") return v.none();
    if (t == "string") return v.is_string();
    if (t == "number") return v.is_number();
    if (t == "integer") return v.is_int();
    if (t == "float") return v.is_float();
    if (t == "boolean") return v.is_bool();
    if (t == "true") return v.is_bool() && std::get<bool>(v.v);
    if (t == "false") return v.is_bool() && !std::get<bool>(v.v);
    if (t == "mapping") return v.is_object();
    if (t == "sequence") return v.is_array() || v.is_string();
    if (t == "iterable") return v.is_array() || v.is_string() || v.is_object();
    if (t == "callable") return false;
    if (t == "odd" || t == "even") {
      if (!v.is_int()) error(pos, cat("'", t, "' test needs an integer"));
      return (std::llabs(v.integer()) % 2 == 1) == (t == "odd");
    }
    if (t == "equalto" || t == "eq" || t == "==" || t == "sameas") return !args.empty() && equal(v, args[0]);
    if (t == "ne" || t == "!=") return args.empty() || !equal(v, args[0]);
    if (t == "in") {
      if (args.empty()) return false;
      const Value& c = args[0];
      if (c.is_string()) return v.is_string() && c.str().find(v.str()) != std::string::npos;
      if (c.is_array()) return std::any_of(c.arr().begin(), c.arr().end(), [&](const Value& x) { return equal(v, x); });
      if (c.is_object()) return v.is_string() && c.find(v.str());
      return false;
    }
    if (t == "lower" || t == "upper") {
      if (!v.is_string()) return false;
      for (char c : v.str())
        if (t == "lower" ? std::isupper(static_cast<unsigned char>(c)) : std::islower(static_cast<unsigned char>(c))) return false;
      return true;
    }
    error(pos, cat("unknown test '", t, "'"));
  }

  bool test(const Expr& e) {
    Value v = eval(*e.a);
    return run_test(e.name, v, eval_args(e), e.pos);
  }
};

}  // namespace

std::string render_chat_template(const std::string& source, const nlohmann::ordered_json& context) {
  Source src{source};
  Parser parser(src, lex(src));
  Body body = parser.parse_template();
  Value globals = from_json(context);
  if (!globals.is_object()) fail("chat template context must be a JSON object");
  Interpreter interp(src, globals);
  std::string out;
  interp.run(body, out);
  return out;
}

std::string render_chat_template(const std::string& source, const nlohmann::json& context) {
  return render_chat_template(source, nlohmann::ordered_json::parse(context.dump()));
}

}  // namespace hfstatic
