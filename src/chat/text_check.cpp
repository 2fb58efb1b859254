#include "chat/text_check.h"

#include "chat/lexer.h"
#include "chat/parser.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace hfstatic {

void check_tokenizer_and_template(const std::string& tokenizer_json, const std::string& tokenizer_config_json) {
  const Tokenizer tokenizer = Tokenizer::from_json(tokenizer_json, tokenizer_config_json);
  if (tokenizer.chat_template().empty()) return;
  try {
    chat::Source source{tokenizer.chat_template()};
    chat::parse_template(source, chat::lex(source));
  } catch (const Error& e) {
    fail("tokenizer_config.json: chat_template: ", e.what());
  }
}

}  // namespace hfstatic
