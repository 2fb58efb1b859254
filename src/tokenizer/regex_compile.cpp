// Parses a tokenizer.json regex (Oniguruma / Ruby syntax) into an AST and compiles it to Pike VM
// instructions (regex_program.h).
#include <string>

#include "tokenizer/regex_program.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace hfstatic::tokenizer {
namespace {

namespace u = hfstatic::unicode;

constexpr size_t kMaxProgramSize = 50000;  // instructions, after expanding counted repetitions
constexpr int kMaxRepeat = 1000;
constexpr int kMaxDepth = 100;  // group nesting

struct Node {
  enum Kind : uint8_t { kEmpty, kChar, kClass, kAny, kConcat, kAlt, kRepeat, kAssert, kLookahead } kind = kEmpty;
  char32_t cp = 0;
  int32_t cls = 0;
  int min = 0, max = 0;  // kRepeat; max < 0: unbounded
  bool lazy = false;
  bool negative = false;  // kLookahead
  Assertion assertion = Assertion::kLineStart;
  std::vector<Node> kids;
};

Node make_node(Node::Kind kind) {
  Node n;
  n.kind = kind;
  return n;
}

uint32_t category_bit(u::Category c) { return uint32_t{1} << c; }

// General category names accepted in \p{..}: one- and two-letter abbreviations and long names.
bool category_mask(const std::string& name, uint32_t& mask) {
  static const char* const kNames[] = {"Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd",
                                       "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm",
                                       "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"};
  struct Group {
    const char *shortname, *longname;
  };
  static const Group kGroups[] = {{"L", "Letter"}, {"M", "Mark"},      {"N", "Number"}, {"P", "Punctuation"},
                                  {"S", "Symbol"}, {"Z", "Separator"}, {"C", "Other"}};
  mask = 0;
  for (int i = 0; i < 30; ++i)
    if (name == kNames[i]) mask = uint32_t{1} << i;
  for (const Group& g : kGroups) {
    if (name != g.shortname && name != g.longname) continue;
    for (int i = 0; i < 30; ++i)
      if (kNames[i][0] == g.shortname[0]) mask |= uint32_t{1} << i;
  }
  if (name == "LC" || name == "L&") mask = category_bit(u::Lu) | category_bit(u::Ll) | category_bit(u::Lt);
  if (name == "Any") mask = ~uint32_t{0};
  return mask != 0;
}

class Parser {
 public:
  Parser(std::string_view pattern, Regex::Program& program) : source_(pattern), program_(program) {
    const char* p = pattern.data();
    const char* end = p + pattern.size();
    while (p < end) {
      char32_t c;
      p += u::decode(p, end, c);
      text_.push_back(c);
    }
  }

  Node parse() {
    Node n = alternation(0);
    if (pos_ < text_.size()) error("unmatched ')'");
    return n;
  }

  [[noreturn]] void error(const std::string& what) const {
    fail("regex \"", std::string(source_), "\": ", what, " at character ", pos_);
  }
  [[noreturn]] void unsupported(const std::string& construct) const {
    fail("regex \"", std::string(source_), "\": unsupported ", construct, " at character ", pos_);
  }

 private:
  bool more() const { return pos_ < text_.size(); }
  char32_t peek(size_t k = 0) const { return pos_ + k < text_.size() ? text_[pos_ + k] : 0; }
  bool eat(char32_t c) {
    if (peek() != c || !more()) return false;
    ++pos_;
    return true;
  }

  Node alternation(int depth) {
    if (depth > kMaxDepth) unsupported("nesting deeper than 100 groups");
    Node alt = make_node(Node::kAlt);
    const bool saved_icase = icase_;
    alt.kids.push_back(concatenation(depth));
    while (eat('|')) alt.kids.push_back(concatenation(depth));
    icase_ = saved_icase;
    if (alt.kids.size() == 1) return std::move(alt.kids[0]);
    return alt;
  }

  Node concatenation(int depth) {
    Node cat = make_node(Node::kConcat);
    while (more() && peek() != '|' && peek() != ')') {
      Node atom_node = atom(depth);
      quantifiers(atom_node);
      cat.kids.push_back(std::move(atom_node));
    }
    return cat;
  }

  // Parses {m}, {m,}, {m,n}, {,n} at pos_; false (pos_ unchanged) when it is not a quantifier.
  bool braces(int& min, int& max) {
    size_t k = pos_ + 1;
    auto number = [&](int& v) {
      const size_t start = k;
      v = 0;
      while (k < text_.size() && text_[k] >= '0' && text_[k] <= '9') {
        v = std::min(v * 10 + static_cast<int>(text_[k] - '0'), 1000000);
        ++k;
      }
      return k > start;
    };
    const bool has_min = number(min);
    if (!has_min) min = 0;
    max = min;
    if (k < text_.size() && text_[k] == ',') {
      ++k;
      if (!number(max)) max = -1;
      if (!has_min && max < 0) return false;
    } else if (!has_min) {
      return false;
    }
    if (k >= text_.size() || text_[k] != '}') return false;
    pos_ = k + 1;
    return true;
  }

  void quantifiers(Node& n) {
    while (more()) {
      int min = 0, max = 0;
      const char32_t c = peek();
      if (c == '?') {
        ++pos_, min = 0, max = 1;
      } else if (c == '*') {
        ++pos_, min = 0, max = -1;
      } else if (c == '+') {
        ++pos_, min = 1, max = -1;
      } else if (c != '{' || !braces(min, max)) {
        return;
      }
      if (max >= 0 && min > max) error("repetition {m,n} with m > n");
      if (min > kMaxRepeat || max > kMaxRepeat) unsupported("repetition count above 1000");
      if (n.kind == Node::kAssert || n.kind == Node::kLookahead) error("quantifier after an assertion");
      Node rep = make_node(Node::kRepeat);
      rep.min = min;
      rep.max = max;
      if (c != '{' && peek() == '+') unsupported("possessive quantifier");
      rep.lazy = eat('?');
      rep.kids.push_back(std::move(n));
      n = std::move(rep);
    }
  }

  Node group(int depth) {
    // After '('.
    if (!eat('?')) return close(alternation(depth + 1));
    const char32_t c = peek();
    if (c == ':') {
      ++pos_;
      return close(alternation(depth + 1));
    }
    if (c == '=' || c == '!') {
      ++pos_;
      Node look = make_node(Node::kLookahead);
      look.negative = c == '!';
      look.kids.push_back(close(alternation(depth + 1)));
      return look;
    }
    if (c == '<' && (peek(1) == '=' || peek(1) == '!')) unsupported("lookbehind");
    if (c == '>') unsupported("atomic group");
    if (c == '<' || c == '\'') {  // named group
      const char32_t closing = c == '<' ? '>' : '\'';
      while (more() && peek() != closing) ++pos_;
      if (!eat(closing)) error("unterminated group name");
      return close(alternation(depth + 1));
    }
    // Options: (?i) (?-i) (?i: ...) (?-i: ...); only i is supported.
    bool on = true, icase = icase_;
    while (more() && peek() != ':' && peek() != ')') {
      const char32_t o = peek();
      if (o == '-') {
        on = false;
      } else if (o == 'i') {
        icase = on;
      } else {
        unsupported(cat("group option '", static_cast<char>(o < 128 ? o : '?'), "'"));
      }
      ++pos_;
    }
    if (eat(')')) {  // applies to the rest of the enclosing group
      icase_ = icase;
      return make_node(Node::kEmpty);
    }
    eat(':');
    const bool saved = icase_;
    icase_ = icase;
    Node body = alternation(depth + 1);
    icase_ = saved;
    return close(std::move(body));
  }

  Node close(Node n) {
    if (!eat(')')) error("missing ')'");
    return n;
  }

  Node atom(int depth) {
    const char32_t c = peek();
    ++pos_;
    switch (c) {
      case '(': return group(depth);
      case '[': return class_node(parse_class());
      case '.': return make_node(Node::kAny);
      case '^': return assertion(Assertion::kLineStart);
      case '$': return assertion(Assertion::kLineEnd);
      case '\\': return escape();
      case '*':
      case '+':
      case '?': error("quantifier without an operand");
      default: return literal(c);
    }
  }

  static Node assertion(Assertion a) {
    Node n = make_node(Node::kAssert);
    n.assertion = a;
    return n;
  }

  Node literal(char32_t c) {
    if (!icase_) {
      Node n = make_node(Node::kChar);
      n.cp = c;
      return n;
    }
    CharClass cls;
    add_range(cls, c, c);
    return class_node(std::move(cls));
  }

  Node class_node(CharClass cls) {
    cls.finish();
    Node n = make_node(Node::kClass);
    n.cls = static_cast<int32_t>(program_.classes.size());
    program_.classes.push_back(std::move(cls));
    return n;
  }

  // Adds [lo, hi] and, in a case-insensitive group, its ASCII case variants (and the two
  // non-ASCII code points that fold to ASCII letters: U+017F to s, U+212A to k).
  void add_range(CharClass& cls, char32_t lo, char32_t hi) {
    cls.items.push_back(ClassItem{ClassItem::kRange, false, lo, hi, 0});
    if (!icase_) return;
    for (char32_t c = lo; c <= hi && c < 128; ++c) {
      if (c >= 'a' && c <= 'z') cls.items.push_back(ClassItem{ClassItem::kRange, false, c - 32, c - 32, 0});
      if (c >= 'A' && c <= 'Z') cls.items.push_back(ClassItem{ClassItem::kRange, false, c + 32, c + 32, 0});
      if ((c | 0x20) == 's') cls.items.push_back(ClassItem{ClassItem::kRange, false, 0x17F, 0x17F, 0});
      if ((c | 0x20) == 'k') cls.items.push_back(ClassItem{ClassItem::kRange, false, 0x212A, 0x212A, 0});
    }
    if (hi >= 128) {
      const u::Category lc = u::category(lo), hc = u::category(hi);
      if (lo != hi || lc == u::Lu || lc == u::Ll || lc == u::Lt || hc == u::Lu || hc == u::Ll)
        if (lo >= 128 || hi >= 128) unsupported("case-insensitive matching of non-ASCII letters");
    }
  }

  uint32_t hex_digits(size_t max_digits, bool braced) {
    uint32_t v = 0;
    size_t n = 0;
    while (more() && n < max_digits) {
      const char32_t h = peek();
      int d = -1;
      if (h >= '0' && h <= '9') d = static_cast<int>(h - '0');
      if ((h | 0x20) >= 'a' && (h | 0x20) <= 'f') d = static_cast<int>((h | 0x20) - 'a' + 10);
      if (d < 0) break;
      v = v * 16 + static_cast<uint32_t>(d);
      ++n, ++pos_;
    }
    if (n == 0 || v > 0x10FFFF) error("bad hexadecimal escape");
    if (braced && !eat('}')) error("missing '}' in \\x{..}");
    return v;
  }

  // An escape that stands for a class item (\d \s \w \h \p{..} and negations); false otherwise.
  bool class_escape(char32_t e, ClassItem& item) {
    item = ClassItem{};
    switch (e) {
      case 'd':
      case 'D': item = ClassItem{ClassItem::kCategories, e == 'D', 0, 0, category_bit(u::Nd)}; return true;
      case 's':
      case 'S': item = ClassItem{ClassItem::kSpace, e == 'S', 0, 0, 0}; return true;
      case 'w':
      case 'W': item = ClassItem{ClassItem::kWord, e == 'W', 0, 0, 0}; return true;
      case 'h':
      case 'H': item = ClassItem{ClassItem::kHexDigit, e == 'H', 0, 0, 0}; return true;
      case 'p':
      case 'P': {
        if (!eat('{')) error("expected '{' after \\p");
        bool negate = e == 'P';
        if (eat('^')) negate = !negate;
        std::string name;
        while (more() && peek() != '}') {
          if (peek() >= 128) error("bad property name");
          name.push_back(static_cast<char>(peek()));
          ++pos_;
        }
        if (!eat('}')) error("missing '}' in \\p{..}");
        uint32_t mask = 0;
        if (name == "White_Space" || name == "Space") {
          item = ClassItem{ClassItem::kSpace, negate, 0, 0, 0};
          return true;
        }
        if (!category_mask(name, mask)) unsupported(cat("property \\p{", name, "}"));
        item = ClassItem{ClassItem::kCategories, negate, 0, 0, mask};
        return true;
      }
      default: return false;
    }
  }

  // A single code point escape (\n, \x41, \., ...).
  char32_t char_escape(char32_t e) {
    switch (e) {
      case 't': return '\t';
      case 'n': return '\n';
      case 'r': return '\r';
      case 'f': return '\f';
      case 'v': return '\v';
      case 'a': return 0x07;
      case 'e': return 0x1B;
      case '0': return 0;
      case 'x': return eat('{') ? hex_digits(8, true) : hex_digits(2, false);
      case 'u': return hex_digits(4, false);
      default: break;
    }
    if (e >= '1' && e <= '9') unsupported("backreference");
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) unsupported(cat("escape \\", static_cast<char>(e)));
    return e;
  }

  Node escape() {
    if (!more()) error("trailing backslash");
    const char32_t e = peek();
    ++pos_;
    switch (e) {
      case 'A': return assertion(Assertion::kTextStart);
      case 'z': return assertion(Assertion::kTextEnd);
      case 'Z': return assertion(Assertion::kTextEndNewline);
      case 'b': return assertion(Assertion::kWordBoundary);
      case 'B': return assertion(Assertion::kNotWordBoundary);
      default: break;
    }
    ClassItem item;
    if (class_escape(e, item)) {
      CharClass cls;
      cls.items.push_back(item);
      return class_node(std::move(cls));
    }
    return literal(char_escape(e));
  }

  CharClass parse_class() {
    // After '['.
    CharClass cls;
    cls.negate = eat('^');
    bool first = true;
    while (more() && (peek() != ']' || first)) {
      first = false;
      if (peek() == '[') {
        if (peek(1) == ':') unsupported("POSIX bracket class");
        if (peek(1) == '^') unsupported("negated nested character class");
        ++pos_;
        if (++class_depth_ > kMaxDepth) unsupported("character classes nested deeper than 100");
        CharClass nested = parse_class();  // a union: its members join this class
        --class_depth_;
        cls.items.insert(cls.items.end(), nested.items.begin(), nested.items.end());
        continue;
      }
      if (peek() == '&' && peek(1) == '&') unsupported("class intersection &&");
      char32_t lo = 0;
      if (eat('\\')) {
        if (!more()) error("trailing backslash");
        const char32_t e = peek();
        ++pos_;
        ClassItem item;
        if (class_escape(e, item)) {
          cls.items.push_back(item);
          continue;
        }
        lo = e == 'b' ? 0x08 : char_escape(e);
      } else {
        lo = peek();
        ++pos_;
      }
      char32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        if (eat('\\')) {
          if (!more()) error("trailing backslash");
          const char32_t e = peek();
          ++pos_;
          ClassItem item;
          if (class_escape(e, item)) error("class escape as the end of a range");
          hi = char_escape(e);
        } else {
          hi = peek();
          ++pos_;
        }
        if (hi < lo) error("range out of order in character class");
      }
      add_range(cls, lo, hi);
    }
    if (!eat(']')) error("missing ']'");
    return cls;
  }

  std::string_view source_;
  Regex::Program& program_;
  std::vector<char32_t> text_;
  size_t pos_ = 0;
  int class_depth_ = 0;
  bool icase_ = false;
};

class Compiler {
 public:
  Compiler(Regex::Program& program, const Parser& parser) : program_(program), parser_(parser) {}

  void emit_program(const Node& root, std::vector<Inst>& code) {
    code_ = &code;
    emit(root);
    push(Inst{Op::kMatch});
  }

 private:
  int32_t push(Inst inst) {
    if (code_->size() >= kMaxProgramSize) parser_.unsupported("pattern: it compiles to over 50000 instructions");
    code_->push_back(inst);
    return static_cast<int32_t>(code_->size() - 1);
  }
  int32_t here() const { return static_cast<int32_t>(code_->size()); }
  Inst& at(int32_t pc) { return (*code_)[static_cast<size_t>(pc)]; }

  void emit(const Node& n) {
    switch (n.kind) {
      case Node::kEmpty: break;
      case Node::kChar: push(Inst{Op::kChar, {}, false, n.cp}); break;
      case Node::kClass: push(Inst{Op::kClass, {}, false, 0, n.cls}); break;
      case Node::kAny: push(Inst{Op::kAny}); break;
      case Node::kAssert: push(Inst{Op::kAssert, n.assertion}); break;
      case Node::kConcat:
        for (const Node& k : n.kids) emit(k);
        break;
      case Node::kAlt: emit_alternation(n); break;
      case Node::kRepeat: emit_repeat(n); break;
      case Node::kLookahead: {
        std::vector<Inst> body;
        std::vector<Inst>* saved = code_;
        emit_program(n.kids[0], body);
        code_ = saved;
        const auto index = static_cast<int32_t>(program_.code.size());
        program_.code.push_back(std::move(body));
        program_.has_lookahead = true;
        push(Inst{Op::kLookahead, {}, n.negative, 0, index});
        break;
      }
    }
  }

  void emit_alternation(const Node& n) {
    std::vector<int32_t> jumps;
    for (size_t i = 0; i < n.kids.size(); ++i) {
      if (i + 1 < n.kids.size()) {
        const int32_t split = push(Inst{Op::kSplit});
        at(split).x = here();
        emit(n.kids[i]);
        jumps.push_back(push(Inst{Op::kJmp}));
        at(split).y = here();
      } else {
        emit(n.kids[i]);
      }
    }
    for (int32_t j : jumps) at(j).x = here();
  }

  // x? as a split preferring x (greedy) or skipping it (lazy).
  void emit_optional(const Node& body, bool lazy) {
    const int32_t split = push(Inst{Op::kSplit});
    const int32_t body_pc = here();
    emit(body);
    (lazy ? at(split).y : at(split).x) = body_pc;
    (lazy ? at(split).x : at(split).y) = here();
  }

  void emit_repeat(const Node& n) {
    const Node& body = n.kids[0];
    for (int i = 0; i < n.min; ++i) emit(body);
    if (n.max < 0) {  // star
      const int32_t split = push(Inst{Op::kSplit});
      const int32_t body_pc = here();
      emit(body);
      push(Inst{Op::kJmp, {}, false, 0, split});
      (n.lazy ? at(split).y : at(split).x) = body_pc;
      (n.lazy ? at(split).x : at(split).y) = here();
      return;
    }
    // x{0,k} as nested optionals: (x(x(x)?)?)?
    std::vector<int32_t> splits;
    for (int i = n.min; i < n.max; ++i) {
      splits.push_back(push(Inst{Op::kSplit}));
      const int32_t body_pc = here();
      emit(body);
      (n.lazy ? at(splits.back()).y : at(splits.back()).x) = body_pc;
    }
    for (int32_t s : splits) (n.lazy ? at(s).x : at(s).y) = here();
  }

  Regex::Program& program_;
  const Parser& parser_;
  std::vector<Inst>* code_ = nullptr;
};

void compute_start_closure(Regex::Program& program);

}  // namespace

bool is_word_char(char32_t cp) {
  if (cp < 128) return (cp >= '0' && cp <= '9') || ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') || cp == '_';
  const u::Category c = u::category(cp);
  return u::is_letter(c) || u::is_mark(c) || c == u::Nd || c == u::Nl || c == u::Pc;
}

bool ClassItem::matches(char32_t cp) const {
  bool m = false;
  switch (kind) {
    case kRange: m = cp >= lo && cp <= hi; break;
    case kCategories: m = (categories >> u::category(cp)) & 1; break;
    case kSpace: m = u::is_whitespace(cp); break;
    case kWord: m = is_word_char(cp); break;
    case kHexDigit: m = (cp >= '0' && cp <= '9') || ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'f'); break;
  }
  return m != negate;
}

bool CharClass::matches_slow(char32_t cp) const {
  bool m = false;
  for (const ClassItem& item : items) {
    if (item.matches(cp)) {
      m = true;
      break;
    }
  }
  return m != negate;
}

void CharClass::finish() {
  ascii[0] = ascii[1] = 0;
  for (char32_t c = 0; c < 128; ++c)
    if (matches_slow(c)) ascii[c >> 6] |= uint64_t{1} << (c & 63);
}

namespace {

void compute_start_closure(Regex::Program& program) {
  const std::vector<Inst>& code = program.code[0];
  std::vector<bool> seen(code.size(), false);
  std::vector<int32_t> stack = {0};
  program.start_closure.clear();
  while (!stack.empty()) {
    const int32_t pc = stack.back();
    stack.pop_back();
    if (seen[static_cast<size_t>(pc)]) continue;
    seen[static_cast<size_t>(pc)] = true;
    program.start_closure.push_back(pc);
    const Inst& inst = code[static_cast<size_t>(pc)];
    if (inst.op == Op::kAssert || inst.op == Op::kLookahead) {
      program.start_closure.clear();
      return;  // position-dependent
    }
    if (inst.op == Op::kJmp) stack.push_back(inst.x);
    if (inst.op == Op::kSplit) {
      stack.push_back(inst.y);
      stack.push_back(inst.x);
    }
  }
  program.start_closure_fixed = true;
}

}  // namespace

void compile_regex(std::string_view pattern, Regex::Program& program) {
  Parser parser(pattern, program);
  const Node root = parser.parse();
  program.code.emplace_back();
  Compiler compiler(program, parser);
  std::vector<Inst> main_code;
  compiler.emit_program(root, main_code);
  program.code[0] = std::move(main_code);
  compute_start_closure(program);
}

}  // namespace hfstatic::tokenizer
