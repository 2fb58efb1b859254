#include "chat/lexer.h"

#include <cctype>

#include "util/error.h"

namespace hfstatic::chat {

std::string Source::where(size_t pos) const {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < pos && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return cat("chat template line ", line, " col ", col);
}

void Source::error(size_t pos, const std::string& msg) const { fail(where(pos), ": ", msg); }

namespace {

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// The next "{{", "{%" or "{#" at or after `from`, or npos.
size_t find_tag_opener(const std::string& s, size_t from) {
  size_t open = s.find('{', from);
  while (open != std::string::npos && open + 1 < s.size() && s[open + 1] != '{' && s[open + 1] != '%' &&
         s[open + 1] != '#')
    open = s.find('{', open + 1);
  if (open != std::string::npos && open + 1 >= s.size()) open = std::string::npos;
  return open;
}

// A quoted string literal starting at p (the quote); appends it and returns the position after it.
size_t lex_string(const Source& src, size_t p, std::vector<Token>& out) {
  const std::string& s = src.text;
  const char quote = s[p];
  std::string val;
  size_t e = p + 1;
  while (e < s.size() && s[e] != quote) {
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
        default:
          val += '\\';
          val += n;
          break;
      }
      ++e;
    } else {
      val += s[e++];
    }
  }
  if (e >= s.size()) src.error(p, "unterminated string literal");
  out.push_back({Tok::kString, val, p});
  return e + 1;
}

// One expression token (name, number, string or operator) at p; returns the position after it.
size_t lex_expression_token(const Source& src, size_t p, std::vector<Token>& out) {
  const std::string& s = src.text;
  const char c = s[p];
  if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
    size_t e = p;
    while (e < s.size() && (std::isalnum(static_cast<unsigned char>(s[e])) || s[e] == '_')) ++e;
    out.push_back({Tok::kName, s.substr(p, e - p), p});
    return e;
  }
  if (is_digit(c)) {
    size_t e = p;
    while (e < s.size() && is_digit(s[e])) ++e;
    bool is_float = false;
    if (e + 1 < s.size() && s[e] == '.' && is_digit(s[e + 1])) {
      is_float = true;
      ++e;
      while (e < s.size() && is_digit(s[e])) ++e;
    }
    out.push_back({is_float ? Tok::kFloat : Tok::kInt, s.substr(p, e - p), p});
    return e;
  }
  if (c == '\'' || c == '"') return lex_string(src, p, out);
  static const char* kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
                               ">",  "(",  ")",  "[",  "]",  "{",  "}", ",", ".", ":", "|", "="};
  for (const char* op : kOps) {
    const size_t n = std::char_traits<char>::length(op);
    if (s.compare(p, n, op) == 0) {
      out.push_back({Tok::kOp, op, p});
      return p + n;
    }
  }
  src.error(p, cat("unexpected character '", c, "'"));
}

struct TagEnd {
  size_t pos;       // after the closer
  bool strip_next;  // the closer had a '-'
};

// The tokens of a {{ ... }} or {% ... %} tag (opened at `open`) from p up to and including its closer.
TagEnd lex_tag(const Source& src, size_t open, size_t p, const std::string& closer, std::vector<Token>& out) {
  const std::string& s = src.text;
  bool strip_next = false;
  for (;;) {
    while (p < s.size() && is_space(s[p])) ++p;
    if (p >= s.size()) src.error(open, "unterminated tag");
    if (s[p] == '-' && s.compare(p + 1, 2, closer) == 0) {
      strip_next = true;
      p += 1;
    }
    if (s.compare(p, 2, closer) == 0) {
      out.push_back({Tok::kClose, closer, p});
      return {p + 2, strip_next};
    }
    p = lex_expression_token(src, p, out);
  }
}

// Applies the whitespace control in front of a tag to the text before it.
void strip_before_tag(const std::string& s, size_t text_start, size_t open, std::string& text) {
  const char kind = s[open + 1];
  const bool minus = open + 2 < s.size() && s[open + 2] == '-';
  const bool plus = open + 2 < s.size() && s[open + 2] == '+';
  if (minus) {
    size_t k = text.size();
    while (k > 0 && is_space(text[k - 1])) --k;
    text.resize(k);
  } else if (kind != '{' && !plus) {
    // lstrip_blocks: drop spaces and tabs between the line start and a block/comment tag.
    size_t q = open;
    while (q > text_start && (s[q - 1] == ' ' || s[q - 1] == '\t')) --q;
    if (q == 0 || s[q - 1] == '\n') text.resize(text.size() >= open - q ? text.size() - (open - q) : 0);
  }
}

}  // namespace

std::vector<Token> lex(const Source& src) {
  const std::string& s = src.text;
  std::vector<Token> out;
  size_t i = 0;
  bool strip_next = false;    // '-' on the previous closing tag
  bool trim_newline = false;  // trim_blocks after a block / comment tag
  while (i < s.size()) {
    const size_t open = find_tag_opener(s, i);
    std::string text = s.substr(i, (open == std::string::npos ? s.size() : open) - i);
    if (trim_newline && !text.empty() && text[0] == '\n') text.erase(0, 1);
    if (strip_next) {
      size_t k = 0;
      while (k < text.size() && is_space(text[k])) ++k;
      text.erase(0, k);
    }
    strip_next = trim_newline = false;
    if (open == std::string::npos) {
      if (!text.empty()) out.push_back({Tok::kText, text, i});
      break;
    }
    strip_before_tag(s, i, open, text);
    if (!text.empty()) out.push_back({Tok::kText, text, i});
    const char kind = s[open + 1];
    const bool marker = open + 2 < s.size() && (s[open + 2] == '-' || s[open + 2] == '+');
    const size_t p = open + 2 + (marker ? 1 : 0);
    if (kind == '#') {
      const size_t close = s.find("#}", p);
      if (close == std::string::npos) src.error(open, "unterminated comment");
      strip_next = close > 0 && s[close - 1] == '-';
      trim_newline = true;
      i = close + 2;
      continue;
    }
    out.push_back({kind == '{' ? Tok::kExprOpen : Tok::kStmtOpen, "", open});
    const TagEnd end = lex_tag(src, open, p, kind == '{' ? "}}" : "%}", out);
    strip_next = end.strip_next;
    trim_newline = kind == '%';
    i = end.pos;
  }
  out.push_back({Tok::kEnd, "", s.size()});
  return out;
}

}  // namespace hfstatic::chat
