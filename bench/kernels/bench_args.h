// Command-line values the kernel benchmarks share.
#pragma once
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/isa.h"

namespace hfstatic::bench_args {

// "1,2" -> {1, 2}.
inline std::vector<int> int_list(const std::string& v) {
  std::vector<int> values;
  for (size_t p = 0; p < v.size(); p = v.find(',', p) == std::string::npos ? v.size() : v.find(',', p) + 1)
    values.push_back(std::atoi(v.c_str() + p));
  return values;
}

// An ISA by name (kernels::isa_name; any other: the highest): the best ISA this CPU runs at or
// below it.
inline kernels::Isa isa_cap(const std::string& v) {
  for (kernels::Isa isa : kernels::kIsas)
    if (v == kernels::isa_name(isa)) return kernels::best_isa(isa);
  return kernels::best_isa();
}

}  // namespace hfstatic::bench_args
