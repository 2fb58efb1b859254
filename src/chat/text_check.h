// The text side of a model checked as a runner would load it: before a program is written
// (export) and when one is checked (validate), so that a broken tokenizer or template is found
// then and not at the first request.
#pragma once
#include <string>

namespace hfstatic {

// Loads tokenizer.json (with tokenizer_config.json, which may be empty) and parses the chat
// template it names, when there is one. Throws Error naming the file and what is wrong.
void check_tokenizer_and_template(const std::string& tokenizer_json, const std::string& tokenizer_config_json);

}  // namespace hfstatic
