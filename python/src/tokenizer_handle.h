// The Python Tokenizer object: a tokenizer shared with the runner it may come from.
#pragma once
#include <memory>
#include <vector>

#include "bindings.h"
#include "chat/chat_template.h"

namespace hfstatic {
class Tokenizer;
}

namespace hfstatic::python {

struct TokenizerHandle {
  std::shared_ptr<const Tokenizer> tokenizer;
  // The tokenizer; a UsageError when there is none.
  const Tokenizer& get() const;
};

// A list of {'role', 'content'} dicts as chat messages; UsageError naming the bad item.
std::vector<ChatMessage> chat_messages(const py::sequence& messages);

}  // namespace hfstatic::python
