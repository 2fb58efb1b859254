// Hugging Face chat templates: a Jinja2-subset interpreter (the language transformers renders with
// trim_blocks and lstrip_blocks) and the rendering of a conversation with a tokenizer's template.
// Supports the statements, expressions, filters, tests and string/dict methods that real model
// templates use; unsupported constructs are reported as errors with their line and column.
#pragma once
#include <ctime>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hfstatic {

class Tokenizer;

struct ChatMessage {
  std::string role;
  std::string content;
  // The message's other fields the template reads (tool_calls, tool_call_id, name): a JSON
  // object; null when there are none.
  nlohmann::ordered_json fields = nullptr;
  bool content_null = false;  // content was null (an assistant message with tool calls only)
};

struct ChatTemplateOptions {
  // The time the template's strftime_now(format) formats; the local time when empty.
  std::function<std::tm()> now;
};

// Renders `source` with the variables in `context` (a JSON object; e.g. messages,
// add_generation_prompt, bos_token, eos_token, tools, documents, enable_thinking). Object key
// order is preserved. Throws Error ("chat template line L col C: ...") on syntax and runtime
// errors, including raise_exception() called by the template.
std::string render_chat_template(const std::string& source, const nlohmann::ordered_json& context,
                                 const ChatTemplateOptions& options = {});
std::string render_chat_template(const std::string& source, const nlohmann::json& context,
                                 const ChatTemplateOptions& options = {});

// The text of a message's content as transformers' chat messages hold it: a string, null (no
// text) or a list of parts, whose {"type": "text", "text": ...} parts are joined. An image part
// ({"type": "image"} or "image_url", as a multimodal template reads it) is an error: programs are
// text models (a Gemma 3 checkpoint exports its language model alone). Errors are one line that
// names the part: "messages[0].content[1]: ...", `where` being "messages[0].content".
std::string message_text(const nlohmann::json& content, const std::string& where);

// Renders tokenizer.chat_template() with messages, add_generation_prompt, and the tokenizer's
// bos_token and eos_token, plus the variables of `extra_context` (a JSON object: tools,
// documents, enable_thinking...). Throws Error when the tokenizer has no chat template.
std::string apply_chat_template(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt,
                                const nlohmann::ordered_json& extra_context = nlohmann::ordered_json::object());

}  // namespace hfstatic
