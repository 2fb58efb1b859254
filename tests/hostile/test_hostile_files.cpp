// Hostile files: wide headers, invalid JSON, FIFOs and devices where a file is expected, output
// paths that are not regular files, and exports stopped by a signal.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "export/graph_builder.h"
#include "format/program.h"
#include "hostile_support.h"
#include "io/io_manager.h"
#include "test_support.h"
#include "util/mapped_file.h"

namespace hfstatic {
namespace {

using hostile::container;
using hostile::error_of;
using testing::AllOf;
using testing::HasSubstr;

std::string parse_error(const std::vector<uint8_t>& bytes) {
  return error_of([&] { SafetensorsView::parse(bytes.data(), bytes.size(), "wide.safetensors"); });
}

TEST(HostileFiles, WideHeaderParsesInTimeLinearInItsSize) {
  // 100,000 zero-size tensors: a 7 MB header that a parser quadratic in an object's keys would
  // take many minutes over. It parses, and the check after parsing names what is wrong.
  std::string header = "{";
  for (int i = 0; i < 100000; ++i)
    header += (i ? ",\"t" : "\"t") + std::to_string(i) + R"(":{"dtype":"F32","shape":[0],"data_offsets":[0,0]})";
  header += R"(,"__metadata__":{"x":"y"}})";
  test::TempDir dir("hostile-files");
  const std::string path = dir.file("wide.hfs");
  hostile::write_bytes(path, container(header));
  EXPECT_THAT(error_of([&] { Program::load(path); }), HasSubstr("not an hfstatic program"));
}

TEST(HostileFiles, InvalidJsonNamesTheByteAndTheReason) {
  const std::string e = parse_error(container("{\"a\": [1, 2"));
  EXPECT_THAT(e, AllOf(HasSubstr("wide.safetensors: header is not valid JSON at byte "), HasSubstr("(line 1, column "),
                       HasSubstr("unexpected end of input; expected ']'")));
  EXPECT_THAT(e, testing::Not(HasSubstr("json.exception")));
}

TEST(HostileFiles, FifoDirectoryAndDeviceAreRefusedWithoutWaiting) {
  test::TempDir dir("hostile-files");
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Opening a FIFO for reading waits for a writer: these would block forever.
  EXPECT_THAT(error_of([&] { Program::load(fifo); }), HasSubstr("fifo: not a regular file (a FIFO)"));
  EXPECT_THAT(error_of([&] { read_text_file(fifo); }), HasSubstr("fifo: not a regular file (a FIFO)"));
  EXPECT_THAT(error_of([&] { read_text_file(dir.path()); }), HasSubstr("not a regular file (a directory)"));
  EXPECT_THAT(error_of([&] { read_text_file("/dev/zero"); }),
              HasSubstr("/dev/zero: not a regular file (a character device)"));
}

TEST(HostileFiles, OutputPathThatIsNotARegularFileIsRefused) {
  test::TempDir dir("hostile-files");
  const std::string fifo = dir.file("out.fifo"), link = dir.file("out.link"), target = dir.file("target");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_symlink(target, link);
  EXPECT_THAT(error_of([&] { AtomicFileWriter w(fifo); }), HasSubstr("out.fifo: exists and is a FIFO; refusing"));
  EXPECT_THAT(error_of([&] { AtomicFileWriter w(link); }), HasSubstr("out.link: exists and is a symbolic link"));
  EXPECT_THAT(error_of([&] { AtomicFileWriter w(dir.path()); }), HasSubstr("exists and is a directory"));
  EXPECT_THAT(error_of([&] { AtomicFileWriter w("/dev/null"); }),
              HasSubstr("/dev/null: exists and is a character device"));
  EXPECT_FALSE(std::filesystem::exists(target));
  // A regular file is replaced as before.
  const std::string regular = dir.file("regular");
  hostile::write_bytes(regular, {1, 2, 3});
  AtomicFileWriter w(regular);
  w.write("ab", 2);
  w.commit();
  EXPECT_EQ(read_text_file(regular), "ab");
}

TEST(HostileFiles, SignalDuringAWriteLeavesNoTemporaryFile) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    test::TempDir dir("hostile-files");
    const std::string out = dir.file("out.hfs");
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      AtomicFileWriter w(out);
      w.write_zeros(1 << 20);
      ::raise(sig);
      ::_exit(0);  // not reached: the signal ends the process
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "signal " << sig << ", status " << status;
    EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "signal " << sig << " left a file in " << dir.path();
  }
}

}  // namespace
}  // namespace hfstatic

namespace hfstatic {
namespace {

TEST(HostileFiles, CachesTheWeightsCannotJustifyAreRefusedBeforeAllocating) {
  // A tiny model exported with a context of 2^24: its caches alone would take gigabytes.
  test::TempDir dir("hostile-files");
  const std::string ckpt = dir.file("ckpt");
  std::filesystem::copy(test::cached_checkpoint("tiny", 1), ckpt);
  nlohmann::json config = nlohmann::json::parse(read_text_file(ckpt + "/config.json"));
  config["max_position_embeddings"] = int64_t(1) << 24;
  hostile::write_bytes(ckpt + "/config.json", [&] {
    const std::string text = config.dump();
    return std::vector<uint8_t>(text.begin(), text.end());
  }());
  GraphOptions g;
  g.prefill_len = 4;
  g.max_context = int64_t(1) << 24;
  auto huge = Program::load(test::export_to(ckpt, dir.file("huge.hfs"), g));
  const std::string e = error_of([&] { IOManagerRegistry::instance().load(huge); });
  EXPECT_THAT(e,
              AllOf(HasSubstr("huge.hfs: running it needs"), HasSubstr("max_context 16777216"),
                    HasSubstr("allowed by default (4x its weights + 512 MiB); raise the limit with --max-buffer-mib")));
  // A limit given explicitly holds for an ordinary program too.
  g.max_context = 256;
  auto ordinary = Program::load(test::export_to(test::cached_checkpoint("tiny", 1), dir.file("ordinary.hfs"), g));
  EXPECT_NO_THROW(IOManagerRegistry::instance().load(ordinary));
  RuntimeOptions tight;
  tight.max_buffer_bytes = 1024;
  EXPECT_THAT(error_of([&] { IOManagerRegistry::instance().load(ordinary, HeapAllocator::instance(), tight); }),
              HasSubstr("MiB allowed; raise the limit with --max-buffer-mib"));
}

}  // namespace
}  // namespace hfstatic

namespace hfstatic {
namespace {

TEST(HostileFiles, AnEmbeddedFileOfTheWrongDtypeIsAnErrorNotAMissingFile) {
  // Read as "this program has no tokenizer" before.
  const std::string spec = R"({"format":"hfstatic-program","format_version":1,"metadata":{},"methods":[]})";
  nlohmann::json header = {
      {"__metadata__", {{"hfstatic.program", spec}}},
      {"hfstatic.file.tokenizer.json", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}}};
  test::TempDir dir("hostile-files");
  const std::string path = dir.file("f32-tokenizer.hfs");
  hostile::write_bytes(path, container(header.dump(), std::vector<uint8_t>(8)));
  EXPECT_THAT(error_of([&] { Program::load(path); }),
              HasSubstr("f32-tokenizer.hfs: embedded file tensor 'hfstatic.file.tokenizer.json' is float32 [2]; "
                        "embedded files are uint8 vectors"));
}

}  // namespace
}  // namespace hfstatic

namespace hfstatic {
namespace {

// Refuses every allocation past the first `budget` bytes, as the heap does when memory runs out.
class ExhaustedAllocator : public BufferAllocator {
 public:
  explicit ExhaustedAllocator(size_t budget) : budget_(budget) {}
  void* allocate(size_t bytes, size_t alignment) override {
    if (bytes > budget_) fail("out of memory mapping ", bytes, " bytes");
    budget_ -= bytes;
    return HeapAllocator::instance().allocate(bytes, alignment);
  }
  void deallocate(void* p, size_t bytes) override { HeapAllocator::instance().deallocate(p, bytes); }

 private:
  size_t budget_;
};

TEST(HostileFiles, AnAllocationThatFailsNamesTheProgram) {
  test::TempDir dir("hostile-files");
  GraphOptions g;
  g.prefill_len = 8;
  g.max_context = 64;
  auto program = Program::load(test::export_to(test::cached_checkpoint("tiny", 1), dir.file("tiny.hfs"), g));
  ExhaustedAllocator allocator(4096);
  EXPECT_THAT(error_of([&] { IOManagerRegistry::instance().load(program, allocator); }),
              AllOf(HasSubstr("tiny.hfs: the caches and buffers cannot be allocated: out of memory mapping")));
}

}  // namespace
}  // namespace hfstatic
