// A small declarative flag parser shared by the subcommands. Every problem is a UsageError
// that names the offending flag or value.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"

namespace hfstatic::cli {

class Args {
 public:
  // value_flags take one value ("-o FILE" or "--out=FILE"); switch_flags take none.
  // Aliases are written "-o|--out": the value is stored under the last spelling.
  Args(const std::vector<std::string>& argv, const std::vector<std::string>& value_flags,
       const std::vector<std::string>& switch_flags);

  bool has(const std::string& flag) const;
  std::optional<std::string> get(const std::string& flag) const;
  std::string get_or(const std::string& flag, const std::string& fallback) const;
  int64_t get_int(const std::string& flag, int64_t fallback, int64_t min, int64_t max) const;
  double get_double(const std::string& flag, double fallback, double min, double max) const;
  const std::vector<std::string>& positional() const { return positional_; }
  // Exactly `count` positional arguments, else a UsageError mentioning `what`.
  void expect_positional(size_t count, const std::string& what) const;

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

}  // namespace hfstatic::cli
