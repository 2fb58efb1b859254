// The chat request's fields that only the chat template reads: `tools`, `documents`,
// `chat_template_kwargs` (and `tool_choice`, `parallel_tool_calls`, accepted and not used: the
// server renders tools into the prompt, it does not run or force them), and the tool-calling
// parts of messages (an assistant's `tool_calls`, a tool message's `tool_call_id`).
#pragma once
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace hfstatic::server {

// Far more than any template reads; each becomes a variable that the template looks up by name.
inline constexpr size_t kMaxTemplateKwargs = 256;

// The template variables the request sets: tools, documents and the keys of
// chat_template_kwargs (e.g. enable_thinking). Throws ApiError (400) naming the bad field.
nlohmann::ordered_json parse_template_context(const nlohmann::ordered_json& body);

// The fields of message `param` (e.g. "messages[2]") beyond role and content that the template
// reads: tool_calls (assistant; each function's JSON `arguments` string becomes a mapping, as
// templates expect), tool_call_id (tool), name. Throws ApiError naming the bad field, or a field
// that the message's role does not take.
nlohmann::ordered_json parse_message_fields(const nlohmann::ordered_json& message, const std::string& role,
                                            const std::string& param);

}  // namespace hfstatic::server
