// Program files changing under a loaded program, and exports killed part way.
//
// Policy (docs/reliability.md): a loaded program maps its file (MAP_PRIVATE, weights used in
// place), so the file must not be modified in place while loaded: truncating it would make the
// next read of a lost page raise SIGBUS. Files are replaced by writing a sibling and renaming it
// over the old name, which is what the exporter does (AtomicFileWriter): the loaded program
// keeps the old inode and keeps working, and the next load sees the new file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "format/program.h"
#include "hostile_support.h"
#include "runner/runner.h"
#include "test_support.h"
#include "util/mapped_file.h"

namespace hfstatic {
namespace {

namespace fs = std::filesystem;
using hostile::error_of;
using testing::HasSubstr;

GenerationConfig greedy(int64_t n) {
  GenerationConfig c;
  c.max_new_tokens = n;
  c.ignore_eos = true;
  return c;
}

std::vector<int64_t> run_tokens(Runner& r, const std::vector<int64_t>& prompt) {
  r.reset();
  return r.generate_tokens(prompt, greedy(6)).tokens;
}

TEST(FilesOnDisk, ReplacingTheFileByRenameKeepsTheLoadedProgramWorking) {
  test::TempDir dir("on-disk");
  GraphOptions g;
  g.prefill_len = 4;
  g.max_context = 32;
  const std::string path = dir.file("p.hfs");
  test::export_to(test::cached_checkpoint("tiny", 1), path, g);
  RunnerOptions o;
  o.threads = 1;
  auto runner = Runner::load(path, o);
  const std::vector<int64_t> prompt = {5, 6, 7};
  const auto before = run_tokens(*runner, prompt);

  // Export a different model over the same path (write a sibling, rename into place).
  test::export_to(test::cached_checkpoint("tiny", 2), path, g);
  EXPECT_EQ(run_tokens(*runner, prompt), before);
  // Also when the replacement is shorter than the old file and the old name is then removed.
  GraphOptions small = g;
  small.max_context = 8;
  test::export_to(test::cached_checkpoint("tiny", 2), path, small);
  fs::remove(path);
  EXPECT_EQ(run_tokens(*runner, prompt), before);

  // A program loaded after the rename is the new one.
  test::export_to(test::cached_checkpoint("tiny", 2), path, g);
  auto fresh = Runner::load(path, o);
  auto reference = Runner::load(test::export_to(test::cached_checkpoint("tiny", 2), dir.file("ref.hfs"), g), o);
  EXPECT_EQ(run_tokens(*fresh, prompt), run_tokens(*reference, prompt));
}

TEST(FilesOnDisk, TruncatedFilesAreRejectedAtLoad) {
  test::TempDir dir("truncated");
  GraphOptions g;
  g.prefill_len = 4;
  g.max_context = 16;
  const std::string path = test::export_to(test::cached_checkpoint("tiny", 1), dir.file("p.hfs"), g);
  const auto size = fs::file_size(path);
  for (uint64_t keep : {uint64_t(0), uint64_t(5), uint64_t(8), uint64_t(200), size / 2, size - 1}) {
    fs::copy_file(path, dir.file("t.hfs"), fs::copy_options::overwrite_existing);
    fs::resize_file(dir.file("t.hfs"), keep);
    std::string e = error_of([&] { Program::load(dir.file("t.hfs")); });
    EXPECT_THAT(e, HasSubstr("t.hfs")) << "kept " << keep << " bytes";
  }
}

// Starts `hfstatic export` and SIGKILLs it once its temporary file exists: nothing may appear at
// the output path. The temporary `<out>.tmp.<pid>` stays behind (nothing can remove it after
// SIGKILL); it is never read, and the next export to the same path succeeds.
TEST(FilesOnDisk, ExportKilledPartWayLeavesNothingAtTheOutputPath) {
  test::TempDir dir("killed-export");
  // Big enough (about 100 MB of weights) that writing takes a while.
  const std::string ckpt = dir.file("ckpt");
  std::string cmd =
      std::string(HFSTATIC_PYTHON) + " " + HFSTATIC_SOURCE_DIR + "/tests/reference/make_tiny_checkpoint.py " + ckpt +
      " --hidden-size 512 --intermediate-size 1024 --layers 8 --heads 8 --kv-heads 2 --vocab-size 16000 >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string out = dir.file("out.hfs");
  bool killed_mid_write = false;
  for (int attempt = 0; attempt < 5 && !killed_mid_write; ++attempt) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::execl(HFSTATIC_CLI, HFSTATIC_CLI, "export", ckpt.c_str(), "-o", out.c_str(), "-q", "--max-context", "64",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    const std::string tmp = out + ".tmp." + std::to_string(pid);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    int status = 0;
    bool exited = false;
    while (std::chrono::steady_clock::now() < deadline) {
      if (fs::exists(tmp) && fs::file_size(tmp) > 0) {
        ::kill(pid, SIGKILL);
        break;
      }
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        exited = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (!exited) ::waitpid(pid, &status, 0);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
      killed_mid_write = true;
      EXPECT_FALSE(fs::exists(out)) << "a half-written file appeared at the output path";
      EXPECT_TRUE(fs::exists(tmp)) << "the temporary file is the only thing left";
      fs::remove(tmp);
    } else {
      // Finished before it could be killed: the file must then be complete.
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      EXPECT_NO_THROW(Program::load(out));
      fs::remove(out);
    }
  }
  EXPECT_TRUE(killed_mid_write) << "the export always finished before it could be killed";
  // The next export to the same path works and writes a complete program.
  auto r = test::run_cli({"export", ckpt, "-o", out, "-q", "--max-context", "64"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NO_THROW(Program::load(out));
}

}  // namespace
}  // namespace hfstatic
