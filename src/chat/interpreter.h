// Renders a parsed chat template: statements, expressions, loops with `loop.*`, namespaces,
// macros, and calls of the built-ins (builtins.h).
#pragma once
#include <string>

#include "chat/chat_template.h"
#include "chat/parser.h"
#include "chat/value.h"

namespace hfstatic::chat {

// `globals` is a mapping of the template's variables. Throws Error at the node that fails.
std::string render(const Source& src, const Body& body, Value globals, const ChatTemplateOptions& options = {});

}  // namespace hfstatic::chat
