// hfstatic tokenize / detokenize: text <-> token ids with a model's Hugging Face tokenizer.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include "cli/args.h"
#include "format/program.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace hfstatic::cli {
namespace {

// Up to `size` bytes from the start of the regular file `path`.
std::string read_file_head(const std::string& path, size_t size) {
  uint64_t file_size = 0;
  const int fd = open_regular_file(path, &file_size);
  std::string head(std::min<uint64_t>(size, file_size), '\0');
  ssize_t n;
  do {
    n = ::read(fd, head.data(), head.size());
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n < 0) fail(path, ": read failed");
  head.resize(static_cast<size_t>(n));
  return head;
}

std::string read_stdin() {
  std::ostringstream ss;
  ss << std::cin.rdbuf();
  return ss.str();
}

// TOKENIZER is a tokenizer.json (with an optional sibling tokenizer_config.json) or a program
// file with embedded tokenizer.json / tokenizer_config.json.
Tokenizer load_tokenizer(const std::string& path) {
  // Only a regular file: a FIFO would block, a directory would read as empty.
  const std::string head = read_file_head(path, 4096);
  const size_t first = head.find_first_not_of(" \n\r\t");
  if (first != std::string::npos && head[first] == '{') return Tokenizer::from_file(path);
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
  if (!args.positional().empty())
    throw UsageError{"unexpected argument '" + args.positional()[0] + "' (text is read from stdin)"};
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
