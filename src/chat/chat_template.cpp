#include "chat/chat_template.h"

#include <map>

#include "chat/interpreter.h"
#include "chat/lexer.h"
#include "chat/parser.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace hfstatic {

std::string render_chat_template(const std::string& source, const nlohmann::ordered_json& context,
                                 const ChatTemplateOptions& options) {
  chat::Source src{source};
  chat::Body body = chat::parse_template(src, chat::lex(src));
  chat::Value globals = chat::from_json(context);
  if (!globals.is_object()) fail("chat template context must be a JSON object");
  return chat::render(src, body, std::move(globals), options);
}

std::string render_chat_template(const std::string& source, const nlohmann::json& context,
                                 const ChatTemplateOptions& options) {
  // Text that is not UTF-8 reads as U+FFFD rather than failing the conversion.
  return render_chat_template(
      source, nlohmann::ordered_json::parse(context.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)),
      options);
}

std::string message_text(const nlohmann::json& content, const std::string& where) {
  if (content.is_null()) return "";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) fail(where, ": expected a string or a list of content parts");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const nlohmann::json& part = content[i];
    const std::string at = cat(where, "[", i, "]");
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      fail(at, ": expected a content part, an object with a 'type'");
    const std::string type = part["type"].get<std::string>();
    if (type == "image" || type == "image_url")
      fail(at, ": an image part ('", type, "') is not supported: the program is a text model (a multimodal ",
           "checkpoint exports its language model alone)");
    if (type != "text") fail(at, ": content part type '", type, "' is not supported (only 'text')");
    if (!part.contains("text") || !part["text"].is_string()) fail(at, ".text: expected a string");
    text += part["text"].get<std::string>();
  }
  return text;
}

std::string apply_chat_template(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt, const nlohmann::ordered_json& extra_context) {
  if (tokenizer.chat_template().empty()) fail("tokenizer has no chat_template (tokenizer_config.json)");
  // Messages are read as the tokenizer reads text: invalid UTF-8 becomes U+FFFD. Keys in sorted
  // order, as templates that walk a mapping have always seen them.
  nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
  for (const auto& m : messages) {
    std::map<std::string, nlohmann::ordered_json> sorted;
    if (m.fields.is_object())
      for (const auto& [key, value] : m.fields.items()) sorted[key] = value;
    sorted["content"] =
        m.content_null ? nlohmann::ordered_json() : nlohmann::ordered_json(unicode::to_valid_utf8(m.content));
    sorted["role"] = unicode::to_valid_utf8(m.role);
    nlohmann::ordered_json message = nlohmann::ordered_json::object();
    for (auto& [key, value] : sorted) message[key] = std::move(value);
    msgs.push_back(std::move(message));
  }
  nlohmann::ordered_json context = {{"add_generation_prompt", add_generation_prompt},
                                    {"bos_token", tokenizer.bos_token()},
                                    {"eos_token", tokenizer.eos_token()},
                                    {"messages", msgs}};
  if (extra_context.is_object())
    for (const auto& [key, value] : extra_context.items())
      if (!context.contains(key)) context[key] = value;
  return render_chat_template(tokenizer.chat_template(), context);
}

}  // namespace hfstatic
