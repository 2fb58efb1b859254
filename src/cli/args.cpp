#include "cli/args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace hfstatic::cli {
namespace {

// Maps every spelling of "-o|--out" to its canonical name "--out".
void add_spellings(const std::vector<std::string>& specs, std::map<std::string, std::string>& out) {
  for (const auto& spec : specs) {
    std::vector<std::string> names;
    size_t start = 0;
    while (true) {
      size_t bar = spec.find('|', start);
      names.push_back(spec.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
      if (bar == std::string::npos) break;
      start = bar + 1;
    }
    for (const auto& n : names) out[n] = names.back();
  }
}

}  // namespace

Args::Args(const std::vector<std::string>& argv, const std::vector<std::string>& value_flags,
           const std::vector<std::string>& switch_flags) {
  std::map<std::string, std::string> value_names, switch_names;
  add_spellings(value_flags, value_names);
  add_spellings(switch_flags, switch_names);
  bool only_positional = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (only_positional || a.size() < 2 || a[0] != '-') {
      positional_.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positional = true;
      continue;
    }
    std::string name = a, inline_value;
    bool has_inline = false;
    if (size_t eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = a.substr(0, eq);
      inline_value = a.substr(eq + 1);
      has_inline = true;
    }
    if (auto it = switch_names.find(name); it != switch_names.end()) {
      if (has_inline) throw UsageError{"flag " + name + " takes no value"};
      values_[it->second] = "1";
    } else if (auto vt = value_names.find(name); vt != value_names.end()) {
      if (has_inline) {
        values_[vt->second] = inline_value;
      } else {
        if (i + 1 >= argv.size()) throw UsageError{"flag " + name + " needs a value"};
        values_[vt->second] = argv[++i];
      }
    } else {
      throw UsageError{"unknown flag " + name};
    }
  }
}

bool Args::has(const std::string& flag) const { return values_.count(flag) != 0; }

std::optional<std::string> Args::get(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Args::get_or(const std::string& flag, const std::string& fallback) const {
  return get(flag).value_or(fallback);
}

int64_t Args::get_int(const std::string& flag, int64_t fallback, int64_t min, int64_t max) const {
  auto v = get(flag);
  if (!v) return fallback;
  errno = 0;
  char* end = nullptr;
  long long parsed = std::strtoll(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || errno == ERANGE)
    throw UsageError{"flag " + flag + ": '" + *v + "' is not an integer"};
  if (parsed < min || parsed > max)
    throw UsageError{"flag " + flag + ": " + *v + " is outside [" + std::to_string(min) + ", " + std::to_string(max) +
                     "]"};
  return parsed;
}

double Args::get_double(const std::string& flag, double fallback, double min, double max) const {
  auto v = get(flag);
  if (!v) return fallback;
  char* end = nullptr;
  double parsed = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0' || !std::isfinite(parsed))
    throw UsageError{"flag " + flag + ": '" + *v + "' is not a number"};
  if (parsed < min || parsed > max)
    throw UsageError{"flag " + flag + ": " + *v + " is outside [" + std::to_string(min) + ", " + std::to_string(max) +
                     "]"};
  return parsed;
}

void Args::expect_positional(size_t count, const std::string& what) const {
  if (positional_.size() < count) throw UsageError{"missing " + what};
  if (positional_.size() > count) throw UsageError{"unexpected argument '" + positional_[count] + "'"};
}

}  // namespace hfstatic::cli
