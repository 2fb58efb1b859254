// Where a JSON text that failed to parse went wrong, in the terms of its fields, for errors that
// name the field rather than a byte offset.
#pragma once
#include <string>
#include <string_view>

namespace hfstatic {

struct JsonFailure {
  std::string field;   // "model.vocab[\"x\"]", "layers[3]"; empty at the top level
  std::string number;  // the number a double cannot hold (1e400), when that is what failed
};

// Parses `text` again, without building anything, to where it fails.
JsonFailure locate_json_failure(std::string_view text);

// "ORIGIN: field F: the number N is out of range (...)" when a number failed, else "" .
std::string json_number_error(std::string_view text, const std::string& origin);

}  // namespace hfstatic
