// `hfstatic perplexity` reads its text in chunks: the chunks' tokens are the whole text's, the
// numbers those of a whole-text run, and a terminal sees the progress on one line.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "runner/perplexity.h"
#include "test_helpers.h"
#include "tokenizer/tokenizer.h"

namespace hfstatic {
namespace {

using test::run_command;
using test::shell_quote;

const std::string kDemo = std::string(HFSTATIC_SOURCE_DIR) + "/models/demo";

// The demo model's held-out text with what a pre-tokenizer treats apart: runs of spaces and
// newlines, tabs, CRLF, digits, punctuation, contractions, multi-byte characters.
std::string mixed_text() {
  std::string text = test::read_file(kDemo + "/heldout.txt");
  text += "\n\n\nNumbers 1234567 and 3.14159, don't we'll  double  spaces\t\ttabs \r\nCRLF\r\n";
  text +=
      "Caf\xc3\xa9 na\xc3\xafve \xe2\x80\x94 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe6\x96\x87 "
      "\xf0\x9f\x98\x80!\n   \n";
  return text;
}

TEST(ChunkCut, PrefersALoneSpaceThenALoneNewlineThenACharacterBoundary) {
  EXPECT_EQ(chunk_cut("ab cd ef"), 5u);           // "ab cd" | " ef"
  EXPECT_EQ(chunk_cut("ab cd  ef\ngh"), 2u);      // the double space is no cut; the lone one is
  EXPECT_EQ(chunk_cut("ab\ncd\nef  "), 6u);       // "ab\ncd\n" | "ef  "
  EXPECT_EQ(chunk_cut("a\n\nb"), 3u);             // no lone newline: a character boundary
  EXPECT_EQ(chunk_cut("x\xc3\xa9\xc3\xa9"), 3u);  // never inside a character
  EXPECT_EQ(chunk_cut("\xc3\xa9"), 0u);
  EXPECT_EQ(chunk_cut(""), 0u);
}

TEST(TextChunks, TokenizeLikeTheWholeText) {
  const Tokenizer tokenizer = Tokenizer::from_file(kDemo + "/tokenizer.json");
  const std::string text = mixed_text();
  const std::string dir = test::temp_dir(), path = dir + "/text.txt";
  test::write_file(path, text);
  const std::vector<int32_t> whole = tokenizer.encode(text, false);
  // 48 bytes always hold a lone space of this text, so no chunk is cut inside a word.
  for (size_t chunk_bytes : {size_t(48), size_t(100), size_t(1000), size_t(1) << 20}) {
    TextChunks chunks(path, chunk_bytes);
    std::string chunk, joined;
    std::vector<int32_t> tokens;
    int n = 0;
    while (chunks.next(chunk)) {
      EXPECT_LE(chunk.size(), chunk_bytes);
      joined += chunk;
      const std::vector<int32_t> ids = tokenizer.encode(chunk, false);
      tokens.insert(tokens.end(), ids.begin(), ids.end());
      ++n;
    }
    EXPECT_EQ(joined, text) << chunk_bytes;
    EXPECT_EQ(chunks.consumed(), text.size());
    EXPECT_EQ(chunks.size(), text.size());
    EXPECT_EQ(n > 1, chunk_bytes < text.size()) << chunk_bytes;
    EXPECT_EQ(tokens, whole) << chunk_bytes;
  }
  std::system(("rm -rf " + shell_quote(dir)).c_str());
}

class PerplexityCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir();
    test::write_file(dir_ + "/text.txt", mixed_text());
  }
  void TearDown() override { std::system(("rm -rf " + shell_quote(dir_)).c_str()); }
  std::string cli(const std::string& args) {
    return shell_quote(HFSTATIC_CLI) + " perplexity -t 2 -f " + shell_quote(dir_ + "/text.txt") + " " + args;
  }
  std::string dir_;
};

TEST_F(PerplexityCli, ChunksGiveTheNumbersOfTheWholeText) {
  // One chunk is the whole text, tokenized at once; 1 KiB chunks cut it a dozen times.
  const auto whole = run_command(cli("--ctx 64 --chunk-kib 1024 2>&1"));
  const auto chunked = run_command(cli("--ctx 64 --chunk-kib 1 2>&1"));
  ASSERT_EQ(whole.exit_code, 0) << whole.out;
  ASSERT_EQ(chunked.exit_code, 0) << chunked.out;
  EXPECT_EQ(chunked.out, whole.out);
  const Tokenizer tokenizer = Tokenizer::from_file(kDemo + "/tokenizer.json");
  const int64_t n = int64_t(tokenizer.encode(mixed_text(), false).size());
  const int64_t windows = (n + 62) / 64, scored = n - (n % 64 == 1 ? 1 : 0) - windows;
  EXPECT_NE(whole.out.find(" " + std::to_string(scored) + " tokens scored in " + std::to_string(windows) +
                           " windows of up to 64\n"),
            std::string::npos)
      << whole.out << " (" << n << " tokens)";
}

TEST_F(PerplexityCli, TooFewTokensIsAOneLineError) {
  test::write_file(dir_ + "/text.txt", "a");
  const auto r = run_command(cli("2>&1"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("1 tokens; perplexity needs at least 2"), std::string::npos) << r.out;
}

TEST_F(PerplexityCli, NoProgressWhenStderrIsNotATerminal) {
  const auto r = run_command(cli("--ctx 64 2>&1 >/dev/null"));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
}

// Runs the tool with stderr on a pseudo-terminal (stdout to /dev/null); returns what the terminal
// received and sets *status to the exit status.
std::string run_on_terminal(const std::vector<std::string>& args, int* status) {
  int master = -1, slave = -1;
  if (openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) return "openpty failed";
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_RDWR);
    dup2(null, 0), dup2(null, 1), dup2(slave, 2);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(slave);
  std::string out;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(master, buffer, sizeof buffer);
    if (n > 0)
      out.append(buffer, size_t(n));
    else if (n < 0 && errno == EINTR)
      continue;
    else
      break;  // EIO once the child has closed the terminal
  }
  close(master);
  waitpid(pid, status, 0);
  return out;
}

TEST_F(PerplexityCli, ATerminalSeesTheProgressOnOneLine) {
  int status = -1;
  const std::string out =
      run_on_terminal({HFSTATIC_CLI, "perplexity", "-t", "2", "-f", dir_ + "/text.txt", "--ctx", "64"}, &status);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  const double mb = double(mixed_text().size()) / 1e6;
  char done[64];
  std::snprintf(done, sizeof done, "\rperplexity: %.1f / %.1f MB, ", mb, mb);
  EXPECT_EQ(out.rfind("\rperplexity: ", 0), 0u) << out;
  EXPECT_NE(out.find(done), std::string::npos) << out;
  EXPECT_NE(out.find(" windows, ppl "), std::string::npos) << out;
  EXPECT_EQ(out.find('\n'), std::string::npos) << out;
  EXPECT_TRUE(out.ends_with("\r\x1b[K")) << out;  // the line is cleared for what stdout prints
}

}  // namespace
}  // namespace hfstatic
