// hfstatic bench: prefill and decode throughput of a program, judged against the machine's
// measured memory bandwidth and FMA peak.
#include <cstdio>
#include <string>

#include "bench/batch.h"
#include "bench/bench.h"
#include "bench/speculation.h"
#include "cli/args.h"
#include "cli/runtime_flags.h"
#include "kernels/thread_pool.h"

namespace hfstatic::cli {
namespace {

std::string stats_str(const nlohmann::json& s) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%9.2f (%.2f .. %.2f)", s["median"].get<double>(), s["min"].get<double>(),
                s["max"].get<double>());
  return buf;
}

std::string percent_or_unknown(const nlohmann::json& fraction) {
  if (!fraction.is_number()) return "unknown";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * fraction.get<double>());
  return buf;
}

int run_bench_command(const std::vector<std::string>& argv) {
  Args args(argv,
            {"-m|--model", "-p|--prompt", "-n|--gen", "-r|--reps", "-t|--threads", "--bandwidth-mib", kMaxBufferFlag,
             "--lookup", "--batch"},
            {"--json", "--no-ceilings"});
  args.expect_positional(0, "");
  auto model = args.get("--model");
  if (!model) throw UsageError{"missing -m FILE"};
  bench::BenchOptions o;
  o.path = *model;
  o.prompt = args.get_int("--prompt", 128, 0, int64_t(1) << 24);
  o.gen = args.get_int("--gen", 64, 0, int64_t(1) << 24);
  o.reps = int(args.get_int("--reps", 5, 1, 1000));
  o.threads = int(args.get_int("--threads", ThreadPool::hardware_threads(), 1, ThreadPool::kMaxThreads));
  o.bandwidth_bytes = uint64_t(args.get_int("--bandwidth-mib", 1024, 16, 1 << 20)) << 20;
  o.ceilings = !args.has("--no-ceilings");
  o.runtime = runtime_options(args);
  const int64_t lookup = args.get_int("--lookup", 0, 1, 64);
  const int64_t batch = args.get_int("--batch", 0, 1, 256);
  bench::BenchResult r = bench::run_bench(o);
  if (lookup > 0) r.json["speculation"] = bench::run_speculation_bench(o, lookup);
  if (batch > 0) r.json["batch"] = bench::run_batch_bench(o, batch);
  const nlohmann::json& j = r.json;
  if (args.has("--json")) {
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  const auto& m = j["model"];
  std::printf("model    %s (%s, weights %s, cache %s, %lld layers)\n", m["path"].get<std::string>().c_str(),
              m["model_type"].get<std::string>().c_str(), m["weights_dtype"].get<std::string>().c_str(),
              m["cache_dtype"].get<std::string>().c_str(), (long long)m["n_layers"].get<int64_t>());
  std::printf("threads  %d, kernels %s\n", j["threads"].get<int>(), j["isa"].get<std::string>().c_str());
  std::printf("load     %.1f ms (first prompt %.1f ms); weights in 2 MiB pages: %s\n",
              j["load"]["seconds"].get<double>() * 1e3, j["load"]["first_prompt_seconds"].get<double>() * 1e3,
              percent_or_unknown(j["load"]["huge_page_fraction"]).c_str());
  const bool ceil = j.contains("machine");
  if (j.contains("pp")) {
    const auto& pp = j["pp"];
    std::printf("pp%-5lld  %s tokens/s  ttft %6.1f ms  %7.1f GFLOP/s", (long long)pp["tokens"].get<int64_t>(),
                stats_str(pp["tokens_per_s"]).c_str(),
                1e3 * pp["tokens"].get<double>() / pp["tokens_per_s"]["median"].get<double>(),
                pp["gflops"].get<double>());
    if (ceil) std::printf("  %5.1f%% of FMA peak", 100 * pp["fraction_of_peak"].get<double>());
    std::printf("  cpu %.0f%%\n", 100 * pp["cpu_share"].get<double>());
    if (pp.contains("fraction_of_peak_paired")) {
      const auto& f = pp["fraction_of_peak_paired"];
      std::printf("         each prefill run against an FMA peak measured right after it: %.1f%% (%.1f .. %.1f)\n",
                  100 * f["median"].get<double>(), 100 * f["min"].get<double>(), 100 * f["max"].get<double>());
    }
  }
  if (j.contains("tg")) {
    const auto& tg = j["tg"];
    std::printf("tg%-5lld  %s tokens/s  %7.2f GB/s (%.1f MiB/token)", (long long)tg["tokens"].get<int64_t>(),
                stats_str(tg["tokens_per_s"]).c_str(), tg["gbps"].get<double>(),
                tg["bytes_per_token"].get<double>() / (1 << 20));
    if (ceil) std::printf("  %5.1f%% of read bandwidth", 100 * tg["fraction_of_bandwidth"].get<double>());
    std::printf("  cpu %.0f%%\n", 100 * tg["cpu_share"].get<double>());
    if (tg.contains("fraction_of_bandwidth_paired")) {
      const auto& f = tg["fraction_of_bandwidth_paired"];
      std::printf("         each decode run against a bandwidth pass right after it: %.1f%% (%.1f .. %.1f)\n",
                  100 * f["median"].get<double>(), 100 * f["min"].get<double>(), 100 * f["max"].get<double>());
    }
    if (const double experts = j["model"]["expert_bytes"].get<double>(); experts > 0)
      std::printf("         bytes a token reads count the routed experts only: %.1f MiB of the %.1f MiB of experts\n",
                  tg["routed_expert_bytes_per_token"].get<double>() / (1 << 20), experts / (1 << 20));
  }
  const auto& mem = j["memory"];
  std::printf("memory   peak RSS %.1f MiB; weights + caches %.1f MiB (+64 MiB budget: %s)\n",
              mem["peak_rss_bytes"].get<double>() / (1 << 20),
              mem["weights_plus_caches_bytes"].get<double>() / (1 << 20),
              mem["within_budget"].get<bool>() ? "within" : "over");
  if (j.contains("speculation")) {
    const auto& sp = j["speculation"];
    const auto& lk = sp["lookup"];
    std::printf(
        "spec     greedy %lld tokens: plain %.1f tokens/s; --lookup %lld %.1f tokens/s (%.2fx), %.2f tokens a "
        "step, %.0f%% of drafts accepted, tokens %s\n",
        (long long)sp["tokens"].get<int64_t>(), sp["plain"]["tokens_per_s"].get<double>(),
        (long long)lk["k"].get<int64_t>(), lk["tokens_per_s"].get<double>(), lk["speedup"].get<double>(),
        lk["tokens_per_step"].get<double>(), 100 * lk["acceptance"].get<double>(),
        lk["identical"].get<bool>() ? "identical" : "DIFFERENT");
    std::printf("ceiling  drafts that are the greedy continuation:");
    for (const auto& c : sp["ceiling"])
      std::printf("  k=%lld %.1f tokens/s (%.2fx)", (long long)c["k"].get<int64_t>(), c["tokens_per_s"].get<double>(),
                  c["speedup"].get<double>());
    std::printf("\n");
  }
  if (j.contains("batch")) {
    const auto& b = j["batch"];
    const auto &one = b["single"], &all = b["batched"];
    std::printf(
        "batch    %lld streams, %lld decode steps: %.1f tokens/s together (%.2fx one stream's %.1f), %.2f ms a token "
        "of each stream (%.2fx one stream's %.2f)\n",
        (long long)b["streams"].get<int64_t>(), (long long)b["tokens"].get<int64_t>(),
        all["tokens_per_s"].get<double>(), all["speedup"].get<double>(), one["tokens_per_s"].get<double>(),
        all["ms_per_token"].get<double>(), all["latency_ratio"].get<double>(), one["ms_per_token"].get<double>());
  }
  if (ceil) {
    const auto& mc = j["machine"];
    std::printf(
        "machine  read %.2f GB/s, triad %.2f GB/s (%.0f MiB buffer, %s in 2 MiB pages); "
        "FMA peak %.1f GFLOP/s (%s), in-cache matmul %.1f GFLOP/s",
        mc["read_gbps"].get<double>(), mc["triad_gbps"].get<double>(), mc["bandwidth_bytes"].get<double>() / (1 << 20),
        percent_or_unknown(mc["bandwidth_huge_page_fraction"]).c_str(), mc["fma_gflops"].get<double>(),
        mc["isa"].get<std::string>().c_str(), mc["gemm_in_cache_gflops"].get<double>());
    if (mc["threads"].get<int64_t>() > 1)
      std::printf(", parallel region %.2f us", mc["region_handover_us"].get<double>());
    std::printf("\n");
  }
  return kExitOk;
}

}  // namespace

HFSTATIC_COMMAND("bench", "measure prefill/decode throughput against the machine's bandwidth and FMA peak",
                 "-m FILE [-p PROMPT_TOKENS=128] [-n GEN_TOKENS=64] [-r REPS=5] [-t THREADS] [--json]\n"
                 "       [--no-ceilings] [--bandwidth-mib N=1024] [--max-buffer-mib N] [--lookup K] [--batch B]\n"
                 "  pp: the prompt fed from an empty cache (ttft: its time); tg: -n decode steps after the prompt.\n"
                 "  --lookup K: greedy -n tokens with prompt lookup of up to K drafts against plain decoding,\n"
                 "  and with drafts that are the greedy continuation (k = 1, 2, 4, 8).\n"
                 "  --batch B: B sequences fed the prompt, then -n decode steps of all B together, against one.\n"
                 "  HFSTATIC_ISA=scalar|avx2|avx2-vnni|avx512|avx512-vnni|avx512-vnni-512 caps the kernel ISA;\n"
                 "  HFSTATIC_HUGE_PAGES=0 maps the weights (and the bandwidth buffer) without huge pages.",
                 run_bench_command);

}  // namespace hfstatic::cli
