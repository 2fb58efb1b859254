// Post-processors: TemplateProcessing, ByteLevel, Roberta, Bert and Sequence, reduced to the ids
// they put before and after a single sequence.
#include "tokenizer/tokenizer_impl.h"
#include "util/error.h"

namespace hfstatic::tokenizer {

using json = nlohmann::json;

namespace {

int32_t special_token_id(const Tokenizer::Impl& t, const std::string& token, const std::string& where) {
  auto id = lookup_token(t, token);
  if (!id) fail(where, ": token \"", token, "\" is not in the vocabulary");
  return *id;
}

}  // namespace

void parse_post_processor(Tokenizer::Impl& t, const json& j, const std::string& where) {
  const std::string type = get_string(j, "type", where);
  if (type == "Sequence") {
    const json& list = require(j, "processors", where);
    if (!list.is_array()) fail(where, ".processors: expected an array");
    for (size_t i = 0; i < list.size(); ++i) parse_post_processor(t, list[i], cat(where, ".processors[", i, "]"));
  } else if (type == "ByteLevel") {
    // Only adjusts offsets; ids are unchanged.
  } else if (type == "TemplateProcessing") {
    const json& single = require(j, "single", where);
    if (!single.is_array()) fail(where, ".single: expected an array");
    const json specials = j.contains("special_tokens") ? j["special_tokens"] : json::object();
    bool seen_sequence = false;
    for (size_t i = 0; i < single.size(); ++i) {
      const json& item = single[i];
      const std::string iw = cat(where, ".single[", i, "]");
      if (item.contains("Sequence")) {
        if (seen_sequence) fail(iw, ": more than one Sequence in the single template");
        seen_sequence = true;
      } else if (item.contains("SpecialToken")) {
        const std::string id = get_string(item["SpecialToken"], "id", iw + ".SpecialToken");
        std::vector<int32_t> ids;
        if (specials.contains(id) && specials[id].contains("ids")) {
          for (const json& v : specials[id]["ids"]) {
            if (!v.is_number_integer()) fail(where, ".special_tokens.", id, ".ids: expected integers");
            ids.push_back(v.get<int32_t>());
          }
        } else {
          ids.push_back(special_token_id(t, id, iw));
        }
        auto& dst = seen_sequence ? t.post_suffix : t.post_prefix;
        dst.insert(dst.end(), ids.begin(), ids.end());
      } else {
        fail(iw, ": expected a Sequence or SpecialToken item");
      }
    }
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    const json& cls = require(j, "cls", where);
    const json& sep = require(j, "sep", where);
    if (!cls.is_array() || cls.size() != 2 || !sep.is_array() || sep.size() != 2)
      fail(where, ": cls and sep must be [token, id] pairs");
    t.post_prefix.push_back(cls[1].get<int32_t>());
    t.post_suffix.push_back(sep[1].get<int32_t>());
  } else {
    fail(where, ": unsupported post_processor type \"", type, "\"");
  }
}

void config_post_processor(Tokenizer::Impl& t, const json& config) {
  if (get_bool(config, "add_bos_token", false) && t.bos_id) t.post_prefix.push_back(*t.bos_id);
  if (get_bool(config, "add_eos_token", false) && t.eos_id) t.post_suffix.push_back(*t.eos_id);
}

}  // namespace hfstatic::tokenizer
