// hfstatic tokenize / detokenize: text <-> token ids with a model's Hugging Face tokenizer.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include "cli/args.h"
#include "format/program.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace hfstatic::cli {
namespace {

std::string read_stdin() {
  std::ostringstream ss;
  ss << std::cin.rdbuf();
  return ss.str();
}

// TOKENIZER is a tokenizer.json (with an optional sibling tokenizer_config.json) or a program
// file with embedded tokenizer.json / tokenizer_config.json.
Tokenizer load_tokenizer(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open tokenizer ", path);
  char c = 0;
  while (in.get(c) && (c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
  }
  if (c == '{') return Tokenizer::from_file(path);
  const std::string json = program_embedded_file(path, "tokenizer.json");
  if (json.empty()) fail(path, ": program has no embedded tokenizer.json");
  const std::string config = program_embedded_file(path, "tokenizer_config.json");
  try {
    return Tokenizer::from_json(json, config);
  } catch (const Error& e) {
    fail(path, ": embedded ", e.what());
  }
}

std::string require_tokenizer(const Args& args) {
  auto t = args.get("--tokenizer");
  if (!t) throw UsageError{"missing -t/--tokenizer TOKENIZER"};
  if (!args.positional().empty()) throw UsageError{"unexpected argument '" + args.positional()[0] + "' (text is read from stdin)"};
  return *t;
}

int run_tokenize(const std::vector<std::string>& argv) {
  Args args(argv, {"-t|--tokenizer"}, {"--no-special"});
  const Tokenizer tok = load_tokenizer(require_tokenizer(args));
  const std::string text = read_stdin();
  const auto ids = tok.encode(text, !args.has("--no-special"));
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ' ';
    line += std::to_string(ids[i]);
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
  return kExitOk;
}

int run_detokenize(const std::vector<std::string>& argv) {
  Args args(argv, {"-t|--tokenizer"}, {"--skip-special"});
  const Tokenizer tok = load_tokenizer(require_tokenizer(args));
  const std::string input = read_stdin();
  std::vector<int32_t> ids;
  std::istringstream in(input);
  std::string word;
  while (in >> word) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size() || v < 0 || v >= tok.vocab_size())
      fail("invalid token id '", word, "' at position ", ids.size(), " (vocabulary size ", tok.vocab_size(), ")");
    ids.push_back(static_cast<int32_t>(v));
  }
  const std::string text = tok.decode(ids, args.has("--skip-special"));
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

HFSTATIC_COMMAND("tokenize", "print the token ids of stdin text",
                 "-t TOKENIZER [--no-special] < text\n"
                 "  TOKENIZER     tokenizer.json (uses a sibling tokenizer_config.json) or a program file\n"
                 "  --no-special  do not add the tokenizer's special tokens (bos/eos...)",
                 run_tokenize);
HFSTATIC_COMMAND("detokenize", "print the text of stdin token ids",
                 "-t TOKENIZER [--skip-special] < ids\n"
                 "  TOKENIZER       tokenizer.json (uses a sibling tokenizer_config.json) or a program file\n"
                 "  --skip-special  leave special tokens out of the text",
                 run_detokenize);

}  // namespace
}  // namespace hfstatic::cli
