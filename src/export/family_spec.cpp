#include "export/family_spec.h"

#include "export/family_entries.h"

namespace hfstatic {

const std::vector<FamilySpec>& families() {
  static const std::vector<FamilySpec> table = {
      llama_family(),   mistral_family(),   qwen2_family(),       qwen3_family(),  phi3_family(),
      smollm3_family(), granite_family(),   gemma3_text_family(), gemma2_family(), gemma3_family(),
      mixtral_family(), qwen2_moe_family(), qwen3_moe_family(),   olmoe_family()};
  return table;
}

const FamilySpec* find_family(std::string_view model_type) {
  for (const FamilySpec& family : families())
    if (family.model_type == model_type) return &family;
  return nullptr;
}

std::string supported_families() {
  std::string out;
  for (const FamilySpec& family : families()) out += (out.empty() ? "" : ", ") + family.model_type;
  return out;
}

}  // namespace hfstatic
