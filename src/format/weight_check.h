// What a program's weights hold: NaN and infinity in float tensors, and in the float16 scales
// of quantized weights NaN, infinity and zero (`hfstatic validate --check-weights`, Python's
// validate(check_weights=True)). The loader checks shapes and dtypes, never values: a weight
// can be well-formed and still make every logit NaN.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "format/program.h"

namespace hfstatic {

struct WeightCheck {
  // "tensor 'NAME' (float16 [576, 1536]): 3 NaN, first at index 17 ([0, 17])": each makes the
  // program compute NaN where it is read.
  std::vector<std::string> problems;
  // Zero scales: a group whose weights all read as 0. The exporter writes one for a group of
  // zeros, so it is reported, not refused.
  std::vector<std::string> notes;
  size_t tensors = 0;  // scanned
  uint64_t bytes = 0;  // scanned
};

// Scans every weight tensor of the program (not its embedded files).
WeightCheck check_weights(const Program& program);

}  // namespace hfstatic
