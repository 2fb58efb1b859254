// hfstatic perplexity: how well a program predicts a text, as llama.cpp's llama-perplexity
// measures it. The text's tokens (no special tokens added) are cut into consecutive windows of
// --ctx tokens (default: the program's max_context); each window is fed from position 0 with
// every logits row computed, and each of its tokens after the first is scored by the logits of
// the row before it. Prints exp(mean NLL) with the standard error of the mean NLL carried
// through exp (ppl * se), the mean NLL and the number of tokens scored. The text is read and
// tokenized --chunk-kib at a time (runner/perplexity.h says where a chunk ends), so memory does
// not grow with the text; on a terminal, stderr shows the progress on one line.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "cli/args.h"
#include "cli/runtime_flags.h"
#include "frontend/default_program.h"
#include "io/io_manager.h"
#include "kernels/thread_pool.h"
#include "runner/perplexity.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace hfstatic::cli {
namespace {

// 1234567 as "1,234,567".
std::string grouped(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "perplexity: 12.3 / 40.0 MB, 1,234 windows, ppl 23.45" on stderr, redrawn at most ten times a
// second, when stderr is a terminal; nothing otherwise.
class Progress {
 public:
  explicit Progress(const TextChunks& text) : text_(text), shown_(isatty(STDERR_FILENO) == 1) {}

  void update(const NllSums& sums, bool force = false) {
    if (!shown_) return;
    const auto now = std::chrono::steady_clock::now();
    if (!force && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    std::fprintf(stderr, "\rperplexity: %.1f / %.1f MB, %s windows", double(text_.consumed()) / 1e6,
                 double(text_.size()) / 1e6, grouped(sums.windows).c_str());
    if (sums.count > 0) std::fprintf(stderr, ", ppl %.2f", std::exp(sums.mean()));
    std::fprintf(stderr, "\x1b[K");
    std::fflush(stderr);
  }
  void clear() {
    if (shown_) std::fprintf(stderr, "\r\x1b[K"), std::fflush(stderr);
  }

 private:
  const TextChunks& text_;
  bool shown_;
  std::chrono::steady_clock::time_point last_{};
};

int run_perplexity(const std::vector<std::string>& argv) {
  Args args(argv, {"-m|--model", "-f|--file", "--ctx", "--chunk-kib", "-t|--threads", kMaxBufferFlag}, {});
  args.expect_positional(0, "");
  auto text_path = args.get("--file");
  if (!text_path) throw UsageError{"missing -f TEXT_FILE"};
  const RuntimeOptions runtime = runtime_options(args);
  ThreadPool pool(int(args.get_int("--threads", ThreadPool::hardware_threads(), 1, ThreadPool::kMaxThreads)));
  std::shared_ptr<const Program> program;
  if (auto model = args.get("--model")) {
    program = Program::load(*model, runtime.huge_pages ? PagePolicy::HugePages : PagePolicy::Plain);
  } else {
    program = frontend::default_program();
  }
  auto manager = IOManagerRegistry::instance().load(program, HeapAllocator::instance(), runtime);
  IOManager* io = manager.get();
  const int64_t ctx = args.get_int("--ctx", io->model().max_context, 2, io->model().max_context);
  const int64_t chunk_kib = args.get_int("--chunk-kib", 1024, 1, int64_t(1) << 20);

  const std::string tokenizer_json = program->embedded_file("tokenizer.json");
  if (tokenizer_json.empty()) fail(program->path(), ": program has no embedded tokenizer.json");
  const Tokenizer tokenizer = Tokenizer::from_json(tokenizer_json, program->embedded_file("tokenizer_config.json"));

  TextChunks text(*text_path, size_t(chunk_kib) << 10);
  Progress progress(text);
  PerplexityWindows windows(*io, ctx, &pool, [&] { progress.update(windows.sums()); });
  std::string chunk;
  while (text.next(chunk)) {
    windows.add(tokenizer.encode(chunk, /*add_special_tokens=*/false));
    progress.update(windows.sums());
  }
  windows.finish();
  progress.clear();
  if (windows.tokens() < 2) fail(*text_path, ": ", windows.tokens(), " tokens; perplexity needs at least 2");

  const NllSums& sums = windows.sums();
  const double mean = sums.mean(), ppl = std::exp(mean);
  std::printf("perplexity %.4f +/- %.4f, mean NLL %.8f, %lld tokens scored in %lld windows of up to %lld\n", ppl,
              ppl * sums.standard_error(), mean, (long long)sums.count, (long long)sums.windows, (long long)ctx);
  return kExitOk;
}

}  // namespace

HFSTATIC_COMMAND("perplexity", "score a text file: perplexity with its standard error",
                 "[-m FILE] -f TEXT_FILE [--ctx N] [--chunk-kib N] [--threads N] [--max-buffer-mib N]", run_perplexity);

}  // namespace hfstatic::cli
