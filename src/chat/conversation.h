// A conversation turned into the tokens a model still has to see, turn after turn.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace hfstatic {

// Renders the messages with the tokenizer's chat template (with the generation prompt) and
// encodes only what the model has not seen yet, so that a model keeps its context from turn to
// turn. The template writes the special tokens: the text is encoded without the tokenizer's
// post-processor (no second bos), and special tokens written in it (a bos_token at the start)
// become their ids, so the bos is fed once, with the first turn.
class Conversation {
 public:
  // `system`, when given, is the first message.
  explicit Conversation(const Tokenizer& tokenizer, const std::optional<std::string>& system = std::nullopt);
  // A conversation that starts with `messages` (e.g. those of a request); `template_context`
  // holds the template's other variables (tools, documents, enable_thinking...).
  Conversation(const Tokenizer& tokenizer, std::vector<ChatMessage> messages,
               nlohmann::ordered_json template_context = nlohmann::ordered_json::object());

  void add_user(std::string text);
  // The model's reply to the last pending_tokens(): every sampled token (an end token included:
  // the model has seen it, or sees it first at the next turn) and the reply's text.
  void add_assistant(const std::vector<int64_t>& tokens, std::string text);

  // The tokens to feed for the conversation so far plus the generation prompt: those the model
  // has not seen. `restart` is set when the template rendered the earlier turns differently from
  // what the model saw: reset the model (Runner::reset) and feed the tokens, the whole
  // conversation. Throws Error when the template cannot render the messages, and
  // TokenLimitError as soon as the tokens pass max_tokens (pass what the model can still take).
  std::vector<int64_t> pending_tokens(bool& restart, size_t max_tokens = Tokenizer::kNoTokenLimit);

  const std::vector<ChatMessage>& messages() const { return messages_; }

 private:
  const Tokenizer* tokenizer_;
  std::vector<ChatMessage> messages_;
  nlohmann::ordered_json template_context_ = nlohmann::ordered_json::object();
  std::string seen_;  // text of every token handed out (and of the replies)
};

}  // namespace hfstatic
