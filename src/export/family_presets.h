// make-checkpoint presets of the phi3, smollm3 and granite families and of the rope scaling
// types beyond llama3.
#pragma once
#include <vector>

#include "export/make_checkpoint.h"

namespace hfstatic {

const std::vector<CheckpointPreset>& family_checkpoint_presets();

}  // namespace hfstatic
