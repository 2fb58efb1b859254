// hfstatic run: generate text (or token ids) from a program, streaming as it goes.
#include <climits>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "chat/conversation.h"
#include "cli/args.h"
#include "cli/runtime_flags.h"
#include "cli/speculation.h"
#include "frontend/default_program.h"
#include "kernels/thread_pool.h"
#include "runner/runner.h"
#include "tokenizer/tokenizer.h"
#include "util/mapped_file.h"

namespace hfstatic::cli {
namespace {

// A sampling flag, checked against the range every front end shares (runner/sampler.h).
double sampling_flag(const Args& args, const std::string& flag, SamplingParameter p, double fallback) {
  const double value = p == SamplingParameter::top_k
                           ? double(args.get_int(flag, int64_t(fallback), INT64_MIN, INT64_MAX))
                           : args.get_double(flag, fallback, -HUGE_VAL, HUGE_VAL);
  if (std::string why = sampling_value_problem(p, value); !why.empty()) throw UsageError{"flag " + flag + ": " + why};
  return value;
}

std::vector<int64_t> parse_token_list(const std::string& text) {
  std::vector<int64_t> ids;
  std::string item;
  std::stringstream ss(text);
  while (std::getline(ss, item, ',')) {
    std::stringstream one(item);
    int64_t id;
    std::string rest;
    if (!(one >> id) || (one >> rest)) throw UsageError{"flag --tokens: '" + item + "' is not a token id"};
    ids.push_back(id);
  }
  if (ids.empty()) throw UsageError{"flag --tokens: no token ids given"};
  return ids;
}

void print_piece(const std::string& piece) {
  std::fwrite(piece.data(), 1, piece.size(), stdout);
  std::fflush(stdout);
}

// One chat turn: feeds what the model has not seen of the conversation (all of it again when the
// template rewrote earlier turns), streams the reply and adds it to the conversation.
GenerationResult chat_turn(Runner& runner, Conversation& conversation, const GenerationConfig& config) {
  bool restart = false;
  const int64_t max_context = runner.model().max_context;
  std::vector<int64_t> ids;
  try {
    ids = conversation.pending_tokens(restart, size_t(max_context));
  } catch (const TokenLimitError& e) {
    fail("prompt does not fit: ", e.what(), " > max_context ", max_context);
  }
  if (restart) runner.reset();
  GenerationResult result = runner.generate_tokens(ids, config, {}, print_piece);
  conversation.add_assistant(result.tokens, result.text);
  return result;
}

// Multi-turn chat on standard input, one user message per line; the context carries over from
// turn to turn.
GenerationResult chat_loop(Runner& runner, const GenerationConfig& config, const std::optional<std::string>& system) {
  Conversation conversation(*runner.tokenizer(), system);
  GenerationResult last;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    conversation.add_user(line);
    last = chat_turn(runner, conversation, config);
    std::printf("\n");
  }
  return last;
}

int run_run(const std::vector<std::string>& argv) {
  Args args(argv,
            {"-m|--model", "-p|--prompt", "-f|--file", "-n|--n-predict", "--temp", "--top-k", "--top-p", "--min-p",
             "--repeat-penalty", "--seed", "--tokens", "-t|--threads", "--stop", "--system", kMaxBufferFlag,
             kLookupFlag, kDraftFlag, kDraftMaxFlag},
            {"--chat", "--stats", "--ignore-eos"});
  args.expect_positional(0, "");
  if (args.has("--prompt") + args.has("--file") + args.has("--tokens") > 1)
    throw UsageError{"give only one of -p, -f and --tokens"};
  GenerationConfig config;
  config.max_new_tokens = args.get_int("--n-predict", 64, 0, int64_t(1) << 24);
  config.sampling.temperature = float(sampling_flag(args, "--temp", SamplingParameter::temperature, 0.0));
  config.sampling.top_k = int64_t(sampling_flag(args, "--top-k", SamplingParameter::top_k, 0.0));
  config.sampling.top_p = float(sampling_flag(args, "--top-p", SamplingParameter::top_p, 1.0));
  config.sampling.min_p = float(sampling_flag(args, "--min-p", SamplingParameter::min_p, 0.0));
  config.sampling.repetition_penalty =
      float(sampling_flag(args, "--repeat-penalty", SamplingParameter::repetition_penalty, 1.0));
  config.sampling.seed = uint64_t(args.get_int("--seed", 0, 0, INT64_MAX));
  config.ignore_eos = args.has("--ignore-eos");
  if (auto stop = args.get("--stop")) config.stop_strings.push_back(*stop);
  RunnerOptions options;
  options.threads = int(args.get_int("--threads", 0, 0, ThreadPool::kMaxThreads));
  options.runtime = runtime_options(args);

  const Speculation speculation = speculation_flags(args);
  std::unique_ptr<Runner> runner;
  if (auto model = args.get("--model")) {
    runner = Runner::load(*model, options);
  } else {
    runner = Runner::load(frontend::default_program(), options);
  }
  const std::unique_ptr<Drafter> drafter =
      make_drafter(speculation, *runner, args.get_or("--model", frontend::kDefaultProgramName), options);
  config.drafter = drafter.get();
  config.draft_max = speculation.max_tokens();

  // The default length fits any program; an explicit -n past the context is an error.
  if (!args.has("--n-predict"))
    config.max_new_tokens = std::min<int64_t>(config.max_new_tokens, runner->model().max_context);

  GenerationResult result;
  if (auto tokens = args.get("--tokens")) {
    if (args.has("--chat")) throw UsageError{"--chat takes text, not --tokens"};
    std::vector<int64_t> ids = parse_token_list(*tokens);
    result = runner->generate_tokens(ids, config, [](int64_t id) {
      std::printf("%lld ", (long long)id);
      std::fflush(stdout);
      return true;
    });
    std::printf("\n");
  } else if (args.has("--chat") && !args.has("--prompt") && !args.has("--file")) {
    if (!runner->tokenizer()) throw Error("this program has no tokenizer; --chat needs one");
    result = chat_loop(*runner, config, args.get("--system"));
  } else {
    std::string prompt = args.get_or("--prompt", "And it came to pass");
    if (auto file = args.get("--file")) prompt = read_text_file(*file);
    if (!runner->tokenizer()) throw Error("this program has no tokenizer; give the prompt as --tokens ids");
    if (args.has("--chat")) {
      Conversation conversation(*runner->tokenizer(), args.get("--system"));
      conversation.add_user(prompt);
      result = chat_turn(*runner, conversation, config);
    } else {
      // The prompt is echoed once it has been accepted: an error comes before any output.
      bool echoed = false;
      auto echo_prompt = [&] {
        if (!echoed) std::fputs(prompt.c_str(), stdout);
        echoed = true;
      };
      result = runner->generate(prompt, config, [&](const std::string& piece) {
        echo_prompt();
        print_piece(piece);
      });
      echo_prompt();
    }
    std::printf("\n");
  }
  if (args.has("--stats")) {
    const GenerationStats& s = result.stats;
    std::fprintf(stderr,
                 "stop: %s | load %.1f ms | ttft %.1f ms | prompt %lld tokens, %.1f tokens/s | generated %lld tokens, "
                 "%.1f tokens/s | "
                 "peak rss %.1f MiB\n",
                 stop_reason_name(result.stop_reason), s.load_ms, s.ttft_ms, (long long)s.prompt_tokens,
                 s.prefill_tokens_per_s(), (long long)s.generated_tokens, s.decode_tokens_per_s(),
                 double(s.peak_rss_bytes) / (1 << 20));
    if (speculation.on())
      std::fprintf(stderr, "speculation: %lld steps, %lld drafted, %lld accepted (%.0f%%), %.2f tokens a step\n",
                   (long long)s.steps, (long long)s.drafted_tokens, (long long)s.accepted_tokens,
                   s.drafted_tokens ? 100.0 * double(s.accepted_tokens) / double(s.drafted_tokens) : 0.0,
                   s.steps ? double(s.generated_tokens - 1) / double(s.steps) : 0.0);
  }
  return kExitOk;
}

}  // namespace

HFSTATIC_COMMAND(
    "run", "generate text from a program (the embedded default without -m)",
    "[-m FILE] [-p PROMPT | -f FILE | --tokens ID,ID,...] [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p P]\n"
    "       [--repeat-penalty R] [--seed S] [--stop STRING] [--ignore-eos] [--chat [--system TEXT]] [-t THREADS] "
    "[--stats]\n"
    "       [--lookup K (draft up to K tokens by prompt lookup) | --draft FILE [--draft-max K=4] (a draft program)]\n"
    "       [--max-buffer-mib N (caches and buffers; default 4x the weights + 512)]\n"
    "       --chat without -p or -f reads one user message per line from standard input, keeping the conversation",
    run_run);

}  // namespace hfstatic::cli
