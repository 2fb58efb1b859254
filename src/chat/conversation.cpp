#include "chat/conversation.h"

#include "tokenizer/tokenizer.h"

namespace hfstatic {

Conversation::Conversation(const Tokenizer& tokenizer, const std::optional<std::string>& system)
    : tokenizer_(&tokenizer) {
  if (system) messages_.push_back({"system", *system});
}

Conversation::Conversation(const Tokenizer& tokenizer, std::vector<ChatMessage> messages,
                           nlohmann::ordered_json template_context)
    : tokenizer_(&tokenizer), messages_(std::move(messages)), template_context_(std::move(template_context)) {}

void Conversation::add_user(std::string text) { messages_.push_back({"user", std::move(text)}); }

void Conversation::add_assistant(const std::vector<int64_t>& tokens, std::string text) {
  messages_.push_back({"assistant", std::move(text)});
  std::vector<int32_t> reply;
  for (int64_t t : tokens)
    if (t < tokenizer_->vocab_size()) reply.push_back(int32_t(t));  // ids past the tokenizer have no text
  seen_ += tokenizer_->decode(reply, /*skip_special=*/false);
}

std::vector<int64_t> Conversation::pending_tokens(bool& restart, size_t max_tokens) {
  const std::string rendered =
      apply_chat_template(*tokenizer_, messages_, /*add_generation_prompt=*/true, template_context_);
  restart = rendered.compare(0, seen_.size(), seen_) != 0;
  if (restart) seen_.clear();
  const std::string_view unseen = std::string_view(rendered).substr(seen_.size());
  const std::vector<int32_t> ids =
      tokenizer_->encode(unseen, /*add_special_tokens=*/false, /*parse_special=*/true, max_tokens);
  seen_ = rendered;
  return std::vector<int64_t>(ids.begin(), ids.end());
}

}  // namespace hfstatic
