// Lexer of the chat-template language: text runs, tag openers and closers, and the expression
// tokens inside tags, with Jinja's whitespace control ('-' and '+' markers) and the trim_blocks /
// lstrip_blocks behaviour transformers renders with.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace hfstatic::chat {

enum class Tok { kText, kExprOpen, kStmtOpen, kClose, kName, kString, kInt, kFloat, kOp, kEnd };

struct Token {
  Tok type;
  std::string text;
  size_t pos;
};

// The template text, for error positions.
struct Source {
  const std::string& text;
  std::string where(size_t pos) const;  // "chat template line L col C"
  [[noreturn]] void error(size_t pos, const std::string& msg) const;
};

// Ends with a kEnd token. Throws Error with the position of unterminated tags, comments and strings.
std::vector<Token> lex(const Source& src);

}  // namespace hfstatic::chat
