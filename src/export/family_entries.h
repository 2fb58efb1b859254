// The entries of the family table (family_spec.h), one function each, defined in the
// family_*.cpp file of their lineage; families() lists them in order.
#pragma once
#include "export/family_spec.h"

namespace hfstatic {

FamilySpec llama_family();
FamilySpec mistral_family();
FamilySpec qwen2_family();
FamilySpec qwen3_family();
FamilySpec phi3_family();
FamilySpec smollm3_family();
FamilySpec granite_family();
FamilySpec gemma3_text_family();
FamilySpec gemma2_family();
FamilySpec gemma3_family();
FamilySpec mixtral_family();
FamilySpec qwen2_moe_family();
FamilySpec qwen3_moe_family();
FamilySpec olmoe_family();

}  // namespace hfstatic
