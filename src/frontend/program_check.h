// The check behind `hfstatic validate` and the Python module's validate().
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "format/program.h"

namespace hfstatic::frontend {

// Every problem of a loaded program: its contract's violations, then (for a program that
// conforms) each method's graph problems, then its embedded tokenizer's and chat template's.
// Messages do not begin with the program's path. Empty when the program is valid.
std::vector<std::string> program_problems(const std::shared_ptr<const Program>& program);

}  // namespace hfstatic::frontend
