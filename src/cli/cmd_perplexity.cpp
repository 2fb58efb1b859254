// hfstatic perplexity: how well a program predicts a text, as llama.cpp's llama-perplexity
// measures it. The text's tokens (no special tokens added) are cut into consecutive windows of
// --ctx tokens (default: the program's max_context); each window is fed from position 0 with
// every logits row computed, and each of its tokens after the first is scored by the logits of
// the row before it. Prints exp(mean NLL) with the standard error of the mean NLL carried
// through exp (ppl * se), the mean NLL and the number of tokens scored.
#include <cmath>
#include <cstdio>

#include "cli/args.h"
#include "cli/default_program.h"
#include "cli/runtime_env.h"
#include "io/hf_static_io_manager.h"
#include "kernels/thread_pool.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace hfstatic::cli {
namespace {

struct NllSums {
  double sum = 0, sum_squares = 0;
  int64_t count = 0;
};

// -log softmax(logits)[target], in double.
double nll(const float* logits, int64_t vocab, int64_t target) {
  float max = logits[0];
  for (int64_t i = 1; i < vocab; ++i) max = std::max(max, logits[i]);
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - double(max));
  return std::log(sum) + double(max) - double(logits[target]);
}

void score_window(HfStaticIOManager& io, std::span<const int64_t> window, ThreadPool* pool, NllSums& sums) {
  const int64_t vocab = io.model().vocab_size;
  io.reset();
  for (const Step& step : io.plan(0, window.size())) {
    const Status status = io.step(step.kind, step.start_pos, window.subspan(step.begin, step.count), pool);
    if (!status.ok()) fail("step at position ", step.start_pos, " failed: ", status.message());
    const float* rows = step.kind == StepKind::Prefill ? static_cast<const float*>(io.execution(step.kind).output_data(
                                                             hf_static::logits_output(io.model().n_layers)))
                                                       : io.logits().data();
    for (size_t r = 0; r < step.count && step.begin + r + 1 < window.size(); ++r) {
      const double v = nll(rows + int64_t(r) * vocab, vocab, window[step.begin + r + 1]);
      sums.sum += v, sums.sum_squares += v * v, ++sums.count;
    }
  }
}

int run_perplexity(const std::vector<std::string>& argv) {
  Args args(argv, {"-m|--model", "-f|--file", "--ctx", "-t|--threads", kMaxBufferFlag}, {});
  args.expect_positional(0, "");
  auto text_path = args.get("--file");
  if (!text_path) throw UsageError{"missing -f TEXT_FILE"};
  const RuntimeOptions runtime = runtime_options(args);
  ThreadPool pool(int(args.get_int("--threads", ThreadPool::hardware_threads(), 1, ThreadPool::kMaxThreads)));
  std::shared_ptr<const Program> program;
  if (auto model = args.get("--model")) {
    program = Program::load(*model, runtime.huge_pages ? PagePolicy::HugePages : PagePolicy::Plain);
  } else {
    auto bytes = default_program_bytes();
    program = Program::load_memory(bytes.data(), bytes.size(), kDefaultProgramName);
  }
  auto manager = IOManagerRegistry::instance().load(program, HeapAllocator::instance(), runtime);
  auto* io = dynamic_cast<HfStaticIOManager*>(manager.get());
  if (!io) fail(program->path(), ": perplexity needs an hf_static program");
  io->set_all_logits(true);
  const int64_t ctx = args.get_int("--ctx", io->model().max_context, 2, io->model().max_context);

  const std::string tokenizer_json = program->embedded_file("tokenizer.json");
  if (tokenizer_json.empty()) fail(program->path(), ": program has no embedded tokenizer.json");
  const Tokenizer tokenizer = Tokenizer::from_json(tokenizer_json, program->embedded_file("tokenizer_config.json"));
  const std::vector<int32_t> ids = tokenizer.encode(read_text_file(*text_path), /*add_special_tokens=*/false);
  const std::vector<int64_t> tokens(ids.begin(), ids.end());
  if (tokens.size() < 2) fail(*text_path, ": ", tokens.size(), " tokens; perplexity needs at least 2");

  NllSums sums;
  int64_t windows = 0;
  for (size_t begin = 0; begin + 1 < tokens.size(); begin += size_t(ctx), ++windows)
    score_window(*io, std::span(tokens).subspan(begin, std::min(tokens.size() - begin, size_t(ctx))), &pool, sums);
  const double n = double(sums.count), mean = sums.sum / n;
  const double variance = std::max(0.0, sums.sum_squares / n - mean * mean);
  const double se = sums.count > 1 ? std::sqrt(variance / (n - 1)) : 0.0;
  const double ppl = std::exp(mean);
  std::printf("perplexity %.4f +/- %.4f, mean NLL %.8f, %lld tokens scored in %lld windows of up to %lld\n", ppl,
              ppl * se, mean, (long long)sums.count, (long long)windows, (long long)ctx);
  return kExitOk;
}

}  // namespace

HFSTATIC_COMMAND("perplexity", "score a text file: perplexity with its standard error",
                 "[-m FILE] -f TEXT_FILE [--ctx N] [--threads N] [--max-buffer-mib N]", run_perplexity);

}  // namespace hfstatic::cli
