// hfstatic export / make-checkpoint: Hugging Face checkpoints in, hf_static programs out.
#include <unistd.h>

#include <cstdio>

#include "cli/args.h"
#include "export/exporter.h"
#include "export/make_checkpoint.h"
#include "format/program_spec.h"
#include "util/error.h"

namespace hfstatic::cli {
namespace {

DType parse_dtype_flag(const Args& args, const std::string& flag, std::initializer_list<DType> allowed,
                       DType fallback) {
  auto v = args.get(flag);
  if (!v) return fallback;
  auto t = dtype_from_name(*v);
  std::string names;
  for (DType a : allowed) {
    if (t == a) return a;
    names += cat(names.empty() ? "" : "|", dtype_name(a));
  }
  throw UsageError{cat("flag ", flag, ": '", *v, "' is not one of ", names)};
}

int run_export(const std::vector<std::string>& argv) {
  Args args(argv,
            {"-o|--out", "--prefill-len", "--max-context", "--cache-dtype", "--weights-dtype", "--group-size",
             "--mutation-order"},
            {"--repeat-state", "-q|--quiet"});
  args.expect_positional(1, "HF_DIR (a Hugging Face checkpoint folder)");
  auto out = args.get("--out");
  if (!out) throw UsageError{"missing -o FILE"};
  ExportOptions options;
  options.graph.max_context = args.get_int("--max-context", 512, 2, int64_t(1) << 24);
  options.graph.prefill_len =
      args.get_int("--prefill-len", std::min<int64_t>(32, options.graph.max_context), 1, int64_t(1) << 24);
  options.graph.cache_dtype = parse_dtype_flag(args, "--cache-dtype", {DType::F32, DType::F16}, DType::F32);
  options.graph.repeat_state = args.has("--repeat-state");
  options.graph.mutation_order = args.get_or("--mutation-order", "input");
  if (args.has("--weights-dtype")) {
    const DType t = parse_dtype_flag(args, "--weights-dtype",
                                     {DType::F32, DType::F16, DType::BF16, DType::I8, DType::I4}, DType::F32);
    if (t == DType::I8 || t == DType::I4)
      options.quant = WeightQuant{t, 32};
    else
      options.weights_dtype = t;
  }
  if (args.has("--group-size")) {
    if (!options.quant) throw UsageError{"flag --group-size: only with --weights-dtype int8 or int4"};
    options.quant->group = args.get_int("--group-size", 32, 32, 128);
    if (!is_quant_group_size(options.quant->group))
      throw UsageError{cat("flag --group-size: ", options.quant->group, " is not one of ", quant_group_sizes_text())};
  }
  const bool show_progress = !args.has("--quiet") && ::isatty(STDERR_FILENO);
  if (show_progress) {
    options.progress = [](uint64_t done, uint64_t total) {
      std::fprintf(stderr, "\rexport: %3d%% (%llu of %llu MiB)", total ? int(done * 100 / total) : 100,
                   (unsigned long long)(done >> 20), (unsigned long long)(total >> 20));
      std::fflush(stderr);
    };
  }
  ExportSummary s = export_program(args.positional()[0], *out, options);
  if (show_progress) std::fprintf(stderr, "\n");
  std::printf("wrote %s: %zu tensors, %.1f MiB of weights, %.1f MiB in all\n", out->c_str(), s.tensors,
              double(s.weight_bytes) / (1 << 20), double(s.file_bytes) / (1 << 20));
  if (s.skipped_tensors > 0)
    std::printf("skipped %zu tensors of %s: the program is the language model alone\n", s.skipped_tensors,
                s.skipped_what.c_str());
  return kExitOk;
}

int run_make_checkpoint(const std::vector<std::string>& argv) {
  Args args(argv, {"--preset", "--seed", "-o|--out", "--dtype", "--shard-mib", "--num-layers"}, {"--list"});
  if (args.has("--list")) {
    for (const auto& p : checkpoint_presets()) std::printf("%-18s %s\n", p.name.c_str(), p.description.c_str());
    return kExitOk;
  }
  args.expect_positional(0, "");
  auto out = args.get("--out");
  if (!out) throw UsageError{"missing -o HF_DIR"};
  MakeCheckpointOptions options;
  options.preset = args.get_or("--preset", "tiny");
  options.seed = uint64_t(args.get_int("--seed", 0, 0, INT64_MAX));
  if (args.has("--dtype"))
    options.dtype = parse_dtype_flag(args, "--dtype", {DType::F32, DType::F16, DType::BF16}, DType::F32);
  options.shard_bytes = uint64_t(args.get_int("--shard-mib", 0, 0, 1 << 20)) << 20;
  if (args.has("--num-layers")) options.num_layers = args.get_int("--num-layers", 0, 1, 4096);
  find_checkpoint_preset(options.preset);  // unknown preset: error before touching the folder
  make_checkpoint(*out, options);
  std::printf("wrote %s (preset %s, seed %llu)\n", out->c_str(), options.preset.c_str(),
              (unsigned long long)options.seed);
  return kExitOk;
}

}  // namespace

HFSTATIC_COMMAND("export", "export a Hugging Face checkpoint folder to a program file",
                 "HF_DIR -o FILE [--prefill-len N] [--max-context N] [--cache-dtype float32|float16]\n"
                 "       [--weights-dtype float32|float16|bfloat16|int8|int4] [--group-size 32|64|128]\n"
                 "       [--repeat-state] [--mutation-order "
                 "input|reverse|by-kind|rotate] [-q]",
                 run_export);
HFSTATIC_COMMAND("make-checkpoint", "write a random-initialised Hugging Face checkpoint",
                 "[--preset NAME] [--seed N] -o HF_DIR [--dtype float32|float16|bfloat16] [--shard-mib N]\n"
                 "       [--num-layers N] | --list",
                 run_make_checkpoint);

}  // namespace hfstatic::cli
