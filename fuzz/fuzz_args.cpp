// Command-line parsing: the input is an argv, arguments separated by NUL bytes, parsed with the
// flag tables of hfstatic export and hfstatic run; every flag is then read as a string, an
// integer and a number. Only cli::UsageError may escape Args.
#include <cstdint>
#include <string>
#include <vector>

#include "cli/args.h"

using namespace hfstatic::cli;

// tests/regressions builds this file into a GoogleTest under another name.
#ifndef HFSTATIC_FUZZ_ENTRY
#define HFSTATIC_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

extern "C" int HFSTATIC_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  std::vector<std::string> argv;
  std::string cur;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      argv.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(char(data[i]));
    }
  }
  if (!cur.empty() || argv.empty()) argv.push_back(cur);
  if (argv.size() > 256) return 0;

  const std::vector<std::vector<std::string>> value_tables = {
      {"-o|--out", "--prefill-len", "--max-context", "--cache-dtype", "--weights-dtype", "--mutation-order"},
      {"-m|--model", "-p|--prompt", "-f|--file", "-n|--n-predict", "--temp", "--top-k", "--top-p", "--min-p",
       "--repeat-penalty", "--seed", "--tokens", "-t|--threads", "--stop", "--system"},
  };
  const std::vector<std::vector<std::string>> switch_tables = {{"--repeat-state", "-q|--quiet"},
                                                               {"--chat", "--stats", "--ignore-eos"}};
  for (size_t k = 0; k < value_tables.size(); ++k) {
    try {
      Args args(argv, value_tables[k], switch_tables[k]);
      std::vector<std::string> flags;
      for (const auto& table : {value_tables[k], switch_tables[k]})
        for (const auto& spec : table)
          flags.push_back(spec.substr(spec.rfind('|') == std::string::npos ? 0 : spec.rfind('|') + 1));
      for (const auto& f : flags) {
        (void)args.has(f);
        (void)args.get_or(f, "");
        try {
          (void)args.get_int(f, 0, INT64_MIN, INT64_MAX);
        } catch (const UsageError&) {}
        try {
          (void)args.get_int(f, 1, 1, int64_t(1) << 24);
        } catch (const UsageError&) {}
        try {
          (void)args.get_double(f, 0.5, 0.0, 2.0);
        } catch (const UsageError&) {}
      }
      try {
        args.expect_positional(1, "FILE");
      } catch (const UsageError&) {}
    } catch (const UsageError&) {}
  }
  return 0;
}
