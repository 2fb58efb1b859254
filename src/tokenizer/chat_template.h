// A Jinja2-subset interpreter for Hugging Face chat templates (the language transformers renders
// with trim_blocks and lstrip_blocks). Supports the statements, expressions, filters, tests and
// string/dict methods that real model templates use; unsupported constructs are reported as
// errors with their line and column.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace hfstatic {

// Renders `source` with the variables in `context` (a JSON object; e.g. messages,
// add_generation_prompt, bos_token, eos_token, tools). Object key order is preserved.
// Throws Error ("chat template line L col C: ...") on syntax and runtime errors, including
// raise_exception() called by the template.
std::string render_chat_template(const std::string& source, const nlohmann::ordered_json& context);
std::string render_chat_template(const std::string& source, const nlohmann::json& context);

}  // namespace hfstatic
