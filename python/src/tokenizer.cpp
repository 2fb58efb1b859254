// Tokenizers: encoding, decoding and chat templates.
#include <vector>

#include "bindings.h"
#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_handle.h"

namespace hfstatic::python {

std::vector<ChatMessage> chat_messages(const py::sequence& messages) {
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < messages.size(); ++i) {
    py::object item = messages[i];
    if (!py::isinstance<py::dict>(item))
      throw UsageError(cat("messages[", i, "]: expected a dict with 'role' and 'content' strings"));
    py::dict d = item.cast<py::dict>();
    if (!d.contains("role") || !py::isinstance<py::str>(d["role"]))
      throw UsageError(cat("messages[", i, "]: 'role' must be a string"));
    if (!d.contains("content") || !(py::isinstance<py::str>(d["content"]) || py::isinstance<py::list>(d["content"])))
      throw UsageError(cat("messages[", i, "]: 'content' must be a string or a list of content parts"));
    py::object content = d["content"];
    std::string text;
    if (py::isinstance<py::str>(content)) {
      text = content.cast<std::string>();
    } else {  // parts: text joined, an image refused (chat::message_text)
      const std::string json = py::module_::import("json").attr("dumps")(content).cast<std::string>();
      try {
        text = message_text(nlohmann::json::parse(json), cat("messages[", i, "].content"));
      } catch (const Error& e) {
        throw UsageError(e.what());
      }
    }
    out.push_back({d["role"].cast<std::string>(), std::move(text)});
  }
  return out;
}

const Tokenizer& TokenizerHandle::get() const {
  if (!tokenizer) throw UsageError("this program has no tokenizer");
  return *tokenizer;
}

namespace {

std::shared_ptr<const Tokenizer> program_tokenizer(const std::optional<std::filesystem::path>& path) {
  auto program = load_program(path);
  std::string json = program->embedded_file("tokenizer.json");
  if (json.empty()) throw Error(program->path() + ": the program embeds no tokenizer.json");
  return std::make_shared<const Tokenizer>(Tokenizer::from_json(json, program->embedded_file("tokenizer_config.json")));
}

std::vector<int32_t> token_ids(const std::vector<int64_t>& ids, int32_t vocab) {
  std::vector<int32_t> out;
  out.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab)
      throw UsageError(cat("ids[", i, "] = ", ids[i], " is outside the vocabulary [0, ", vocab, ")"));
    out.push_back(int32_t(ids[i]));
  }
  return out;
}

py::object optional_id(std::optional<int32_t> id) { return id ? py::object(py::int_(*id)) : py::none(); }

}  // namespace

void bind_tokenizer(py::module_& m) {
  py::class_<TokenizerHandle>(m, "Tokenizer",
                              "A Hugging Face tokenizer.json tokenizer (BPE), as Hugging Face encodes and decodes.")
      .def(py::init([](std::optional<std::filesystem::path> program) {
             py::gil_scoped_release release;
             return TokenizerHandle{program_tokenizer(program)};
           }),
           py::arg("program") = py::none(),
           "The tokenizer embedded in the program at `program` (None: the default program). Raises FormatError.")
      .def_static(
          "from_file",
          [](const std::filesystem::path& path) {
            return TokenizerHandle{std::make_shared<const Tokenizer>(Tokenizer::from_file(path.string()))};
          },
          py::arg("path"), "Reads a tokenizer.json (and a tokenizer_config.json beside it, when there is one).")
      .def_static(
          "from_json",
          [](const std::string& tokenizer_json, const std::string& config_json) {
            auto tokenizer = Tokenizer::from_json(tokenizer_json, config_json);
            return TokenizerHandle{std::make_shared<const Tokenizer>(std::move(tokenizer))};
          },
          py::arg("tokenizer_json"), py::arg("tokenizer_config_json") = "",
          "A tokenizer from the text of a tokenizer.json (and of a tokenizer_config.json).")
      .def(
          "encode",
          [](const TokenizerHandle& t, const std::string& text, bool add_special_tokens,
             std::optional<size_t> max_tokens) {
            const Tokenizer& tok = t.get();
            py::gil_scoped_release release;
            return refusals_are_usage_errors([&] {
              return tok.encode(text, add_special_tokens, /*parse_special=*/true,
                                max_tokens.value_or(Tokenizer::kNoTokenLimit));
            });
          },
          py::arg("text"), py::arg("add_special_tokens") = true, py::kw_only(), py::arg("max_tokens") = py::none(),
          "Token ids of `text`; add_special_tokens applies the post-processor (a bos, for instance). "
          "max_tokens: raises UsageError ('more than N tokens') as soon as the ids pass it, having "
          "tokenized little more than that.")
      .def(
          "decode",
          [](const TokenizerHandle& t, const std::vector<int64_t>& ids, bool skip_special_tokens) {
            const Tokenizer& tok = t.get();
            std::vector<int32_t> ids32 = token_ids(ids, tok.vocab_size());
            py::gil_scoped_release release;
            return refusals_are_usage_errors([&] { return tok.decode(ids32, skip_special_tokens); });
          },
          py::arg("ids"), py::arg("skip_special_tokens") = false,
          "The text of `ids` (always valid UTF-8); raises UsageError for an id outside the vocabulary.")
      .def(
          "apply_chat_template",
          [](const TokenizerHandle& t, const py::sequence& messages, bool add_generation_prompt) {
            const Tokenizer& tok = t.get();
            std::vector<ChatMessage> list = chat_messages(messages);
            return refusals_are_usage_errors([&] { return apply_chat_template(tok, list, add_generation_prompt); });
          },
          py::arg("messages"), py::arg("add_generation_prompt") = true,
          "Renders `messages` (a list of {'role', 'content'} dicts) with the tokenizer's chat template.")
      .def(
          "token",
          [](const TokenizerHandle& t, int64_t id) {
            const Tokenizer& tok = t.get();
            return tok.token(token_ids({id}, tok.vocab_size())[0]);
          },
          py::arg("id"), "The vocabulary string of an id (e.g. 'Ġhello').")
      .def(
          "token_id",
          [](const TokenizerHandle& t, const std::string& token) { return optional_id(t.get().token_id(token)); },
          py::arg("token"), "The id of a vocabulary string, or None.")
      .def(
          "is_special",
          [](const TokenizerHandle& t, int64_t id) {
            const Tokenizer& tok = t.get();
            return tok.is_special(token_ids({id}, tok.vocab_size())[0]);
          },
          py::arg("id"), "Whether the id is a special added token.")
      .def_property_readonly(
          "vocab_size", [](const TokenizerHandle& t) { return t.get().vocab_size(); }, "Number of ids.")
      .def_property_readonly(
          "bos_id", [](const TokenizerHandle& t) { return optional_id(t.get().bos_id()); },
          "The beginning-of-sequence id, or None.")
      .def_property_readonly(
          "eos_id", [](const TokenizerHandle& t) { return optional_id(t.get().eos_id()); },
          "The end-of-sequence id, or None.")
      .def_property_readonly(
          "chat_template", [](const TokenizerHandle& t) { return t.get().chat_template(); },
          "The chat template's source (empty when the tokenizer has none).")
      .def("__repr__", [](const TokenizerHandle& t) {
        if (!t.tokenizer) return std::string("<hfstatic.Tokenizer (none)>");
        return cat("<hfstatic.Tokenizer vocab_size=", t.tokenizer->vocab_size(), ">");
      });
}

}  // namespace hfstatic::python
