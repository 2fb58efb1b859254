#include "bench/bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <sstream>

#include <sys/resource.h>

#include "bench/fma_probe.h"
#include "contract/hf_static_contract.h"
#include "format/program.h"
#include "io/io_manager.h"
#include "kernels/isa.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "kernels/thread_pool.h"
#include "runner/runner.h"
#include "util/error.h"
#include "util/huge_pages.h"
#include "util/proc_stats.h"

namespace hfstatic::bench {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

// CPU seconds (user + system) this process has used.
double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Of the resident bytes of the mapping holding `addr`, the fraction in huge pages.
std::optional<double> resident_huge_fraction(const void* addr) {
  std::optional<PageUsage> u = page_usage(addr);
  if (!u || u->resident == 0) return std::nullopt;
  return double(u->huge) / double(u->resident);
}

json optional_json(std::optional<double> v) { return v ? json(*v) : json(nullptr); }

}  // namespace

Stats Stats::of(std::vector<double> s) {
  Stats r;
  if (s.empty()) return r;
  std::sort(s.begin(), s.end());
  r.min = s.front();
  r.max = s.back();
  r.median = s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]);
  return r;
}

json Stats::to_json() const { return {{"median", median}, {"min", min}, {"max", max}}; }

// ---- machine ceilings -------------------------------------------------------------------

BandwidthProbe::BandwidthProbe(ThreadPool* pool, uint64_t bytes, bool huge_pages)
    : pool_(pool),
      parts_(pool ? pool->threads() : 1),
      n_(size_t(bytes / 64 * 64 / sizeof(uint64_t))),
      bytes_(n_ * sizeof(uint64_t)),
      buf_(static_cast<uint64_t*>(std::aligned_alloc(2 << 20, (bytes_ + (2 << 20) - 1) / (2 << 20) * (2 << 20))),
           std::free) {
  if (!buf_) fail("cannot allocate ", bytes_ >> 20, " MiB for the bandwidth test");
  if (huge_pages) advise_huge_pages(buf_.get(), bytes_);  // as the program's weights get (MappedFile::open)
  ScopedThreadPool scope(pool_);
  parallel_for(parts_, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      auto [b, e] = part(n_, c);
      for (size_t i = b; i < e; ++i) buf_[i] = i;
    }
  });
}

std::optional<double> BandwidthProbe::huge_page_fraction() const { return resident_huge_fraction(buf_.get()); }

std::pair<size_t, size_t> BandwidthProbe::part(size_t total, int64_t index) const {
  const size_t base = total / size_t(parts_) / 8 * 8;
  const size_t b = base * size_t(index);
  return {b, index + 1 == parts_ ? total : b + base};
}

double BandwidthProbe::read_gbps(int passes) {
  ScopedThreadPool scope(pool_);
  volatile uint64_t sink = 0;
  double best = 0;
  for (int pass = 0; pass < passes; ++pass) {
    std::vector<uint64_t> sums(size_t(parts_), 0);
    auto t0 = Clock::now();
    parallel_for(parts_, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        auto [b, e] = part(n_, c);
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        const uint64_t* p = buf_.get();
        for (size_t i = b; i < e; i += 8) {
          s0 += p[i] + p[i + 4];
          s1 += p[i + 1] + p[i + 5];
          s2 += p[i + 2] + p[i + 6];
          s3 += p[i + 3] + p[i + 7];
        }
        sums[size_t(c)] = s0 + s1 + s2 + s3;
      }
    });
    const double t = seconds_since(t0);
    for (uint64_t s : sums) sink = sink + s;
    best = std::max(best, double(bytes_) / t / 1e9);
  }
  return best;
}

double BandwidthProbe::triad_gbps(int passes) {
  ScopedThreadPool scope(pool_);
  // Three arrays of a third of the buffer each.
  const size_t m = n_ / 3 / 8 * 8;
  double* a = reinterpret_cast<double*>(buf_.get());
  double* b = a + m;
  double* c = b + m;
  parallel_for(parts_, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t k = cb; k < ce; ++k) {
      auto [lo, hi] = part(m, k);
      for (size_t i = lo; i < hi; ++i) a[i] = 0, b[i] = 1.0, c[i] = 2.0;
    }
  });
  volatile uint64_t sink = 0;
  double best = 0;
  for (int pass = 0; pass < passes; ++pass) {
    auto t0 = Clock::now();
    parallel_for(parts_, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t k = cb; k < ce; ++k) {
        auto [lo, hi] = part(m, k);
        for (size_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0 * c[i];
      }
    });
    const double t = seconds_since(t0);
    sink = sink + uint64_t(a[m / 2]);
    best = std::max(best, 3.0 * double(m) * sizeof(double) / t / 1e9);
  }
  return best;
}

double fma_peak_gflops(ThreadPool* pool, int runs, kernels::Isa isa) {
  ScopedThreadPool scope(pool);
  const int64_t threads = pool ? pool->threads() : 1;
  // Many short runs, best one: robust to other processes sharing the cores.
  const int64_t iters = isa == kernels::Isa::Scalar ? 400000 : 200000;
  double best = 0;
  for (int rep = 0; rep < runs; ++rep) {
    std::vector<double> flops(size_t(threads), 0);
    auto t0 = Clock::now();
    parallel_for(threads, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) flops[size_t(i)] = fma_probe(isa, iters);
    });
    const double t = seconds_since(t0);
    double total = 0;
    for (double f : flops) total += f;
    best = std::max(best, total / t / 1e9);
  }
  return best;
}

double region_handover_us(ThreadPool* pool, int regions, int passes) {
  if (!pool || pool->threads() < 2) return 0;
  ScopedThreadPool scope(pool);
  std::atomic<int64_t> items{0};
  return fastest_us_per_call(regions, passes, [&] {
    parallel_for(pool->threads(), 1, [&](int64_t b, int64_t e) { items.fetch_add(e - b, std::memory_order_relaxed); });
  });
}

PeakResult measure_peak(ThreadPool* pool, kernels::Isa isa) {
  PeakResult r;
  r.region_us = region_handover_us(pool, 2000, 10);
  r.isa = kernels::isa_name(isa);
  r.fma_gflops = fma_peak_gflops(pool, 50, isa);
  const kernels::KernelTable& k = *kernels::kernel_table(isa);
  ScopedThreadPool scope(pool);
  // In-cache matrix multiply: 128 rows x 512 -> 512, float32 weights (1 MiB).
  const int64_t rows = 128, in = 512, out = 512;
  std::vector<float> x(size_t(rows * in)), w(size_t(in * out)), y(size_t(rows * out));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1, 1);
  for (auto& v : x) v = d(rng);
  for (auto& v : w) v = d(rng);
  for (int rep = 0; rep < 30; ++rep) {
    auto t0 = Clock::now();
    k.linear(x.data(), rows, in, w.data(), DType::F32, out, nullptr, DType::F32, y.data());
    const double t = seconds_since(t0);
    r.gemm_gflops = std::max(r.gemm_gflops, 2.0 * rows * in * out / t / 1e9);
  }
  return r;
}

// ---- cost model ---------------------------------------------------------------------------

double MethodCost::decode_bytes(int64_t context) const {
  double bytes = weight_bytes + embedding_row_bytes;
  for (const auto& a : attention) bytes += 2.0 * double(a.n_kv_heads * context * a.head_dim * a.elem);
  return bytes;
}

double MethodCost::flops(int64_t start, int64_t count) const {
  double f = 2.0 * (linear_params - output_linear_params) * double(count) + 2.0 * output_linear_params;
  // Row i sees start + i + 1 slots: QK^T and PV are 2 * head_dim FLOPs per slot and head each.
  const double slots = double(count) * double(start) + double(count) * double(count + 1) / 2.0;
  for (const auto& a : attention) f += 4.0 * double(a.n_heads * a.head_dim) * slots;
  return f;
}

namespace {

// A moe node (ops_moe.h): its router, and top_k of its experts at their average size.
template <typename WeightOf>
void add_moe_cost(const NodeSpec& node, const WeightOf& weight, MethodCost& c) {
  const int64_t experts = node.attrs.value("n_experts", int64_t(0)), top_k = node.attrs.value("top_k", int64_t(0));
  if (experts <= 0 || top_k <= 0) return;
  if (const TensorInfo* router = weight(node.inputs[1]); router && router->shape.size() == 2) {
    c.linear_params += double(router->shape[0]) * double(router->shape[1]);
    c.weight_bytes += double(router->size);
  }
  const std::vector<QuantizedOperand> quant = quantized_operands(node);
  double params = 0, bytes = 0;
  auto add = [&](const std::string& name, double per_byte) {
    if (const TensorInfo* w = weight(name))
      bytes += double(w->size), params += double(*shape_numel(w->shape)) * per_byte;
  };
  for (const QuantizedOperand& q : quant) {
    add(q.weight, q.quant.dtype == DType::I4 ? 2 : 1);
    if (const TensorInfo* s = weight(q.scales)) bytes += double(s->size);
  }
  if (quant.empty())
    for (size_t i = 2; i < node.inputs.size(); ++i) add(node.inputs[i], 1);
  const double share = double(top_k) / double(experts);
  c.linear_params += params * share;
  c.expert_bytes += bytes;
  c.routed_expert_bytes += bytes * share;
  c.weight_bytes += bytes * share;
}

}  // namespace

MethodCost method_cost(const Program& program, const std::string& name) {
  const MethodSpec* m = program.spec().find_method(name);
  if (!m) fail("program has no method '", name, "'");
  MethodCost c;
  auto weight = [&](const std::string& w) -> const TensorInfo* { return program.weight(w).info; };
  if (m->inputs.size() > hf_static::kTokensInput && m->inputs[hf_static::kTokensInput].shape.size() == 2)
    c.rows = m->inputs[hf_static::kTokensInput].shape[1];
  for (const NodeSpec& node : m->nodes) {
    // A quantized weight is read with its scales; int4 holds two input features a byte.
    const std::vector<QuantizedOperand> quants = quantized_operands(node);
    const QuantizedOperand* quant = quants.empty() ? nullptr : &quants[0];
    const TensorInfo* scales = quant ? weight(quant->scales) : nullptr;
    const double per_byte = quant && quant->quant.dtype == DType::I4 ? 2 : 1;
    const size_t bias_at = quant ? 3 : 2;
    if (node.op == "linear" && node.inputs.size() >= 2) {
      if (const TensorInfo* w = weight(node.inputs[1]); w && w->shape.size() == 2) {
        const double params = double(w->shape[0]) * double(w->shape[1]) * per_byte;
        c.linear_params += params;
        const bool method_output =
            node.outputs.size() == 1 && std::any_of(m->outputs.begin(), m->outputs.end(),
                                                    [&](const OutputSpec& o) { return o.value == node.outputs[0]; });
        if (method_output) c.output_linear_params += params;
        c.weight_bytes += double(w->size) + (scales ? double(scales->size) : 0);
      }
      if (node.inputs.size() == bias_at + 1)
        if (const TensorInfo* b = weight(node.inputs[bias_at])) c.weight_bytes += double(b->size);
    } else if (node.op == "moe" && node.inputs.size() >= 2) {
      add_moe_cost(node, weight, c);
    } else if ((node.op == "rms_norm" || node.op == "head_rms_norm") && node.inputs.size() == 2) {
      if (const TensorInfo* w = weight(node.inputs[1])) c.weight_bytes += double(w->size);
    } else if (node.op == "embedding" && node.inputs.size() >= 2) {
      if (const TensorInfo* w = weight(node.inputs[1]); w && w->shape.size() == 2 && w->shape[0] > 0) {
        c.embedding_row_bytes = double(w->size) / double(w->shape[0]);
        if (scales && scales->shape.size() == 2 && scales->shape[0] > 0)
          c.embedding_row_bytes += double(scales->size) / double(scales->shape[0]);
      }
    } else if (node.op == "attention" && node.inputs.size() >= 2) {
      const ValueSpec* kc = m->find_value(node.inputs[1]);
      if (!kc || kc->shape.size() != 4) continue;
      MethodCost::Attention a;
      a.n_heads = node.attrs.value("n_heads", int64_t(0));
      a.n_kv_heads = kc->shape[1];
      a.head_dim = kc->shape[3];
      a.elem = int64_t(dtype_size(kc->dtype));
      c.attention.push_back(a);
    }
  }
  return c;
}

// ---- the model benchmark ----------------------------------------------------------------

namespace {

// The loaded model and the tokens it is timed on: warm-up, prompts and decode runs, through the
// runner's steps (Runner::prefill, Runner::decode) as a generation takes them.
struct ModelRun {
  const BenchOptions& o;
  std::unique_ptr<Runner> runner;
  std::vector<int64_t> prompt, gen;

  ModelRun(const BenchOptions& options, std::unique_ptr<Runner> loaded) : o(options), runner(std::move(loaded)) {
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int64_t> tok(0, runner->model().vocab_size - 1);
    prompt.resize(size_t(std::max<int64_t>(o.prompt, 1)));
    for (auto& t : prompt) t = tok(rng);
    gen.resize(size_t(o.gen + 2));
    for (auto& t : gen) t = tok(rng);
  }
  ThreadPool* pool() { return &runner->thread_pool(); }
  // Warm-up (pages the weights in): a prompt and two decode steps; returns the prompt's time.
  double warm_up() {
    runner->reset();
    auto tw = Clock::now();
    runner->prefill(std::span<const int64_t>(prompt.data(), size_t(std::max<int64_t>(o.prompt, 1))));
    const double first_s = seconds_since(tw);
    runner->decode(gen[0]);
    runner->decode(gen[1]);
    return first_s;
  }
  // The prompt from an empty cache; returns its wall time and adds its CPU time to *cpu.
  double time_prefill(double* cpu) {
    runner->reset();
    const double c0 = process_cpu_seconds();
    auto t = Clock::now();
    runner->prefill(std::span<const int64_t>(prompt.data(), size_t(o.prompt)));
    const double wall = seconds_since(t);
    *cpu += process_cpu_seconds() - c0;
    return wall;
  }
  // -n decode steps after the prompt; returns their wall time and adds their CPU time to *cpu.
  double time_decode(double* cpu) {
    runner->reset();
    if (o.prompt > 0) runner->prefill(std::span<const int64_t>(prompt.data(), size_t(o.prompt)));
    const double c0 = process_cpu_seconds();
    auto t = Clock::now();
    for (int64_t i = 0; i < o.gen; ++i) runner->decode(gen[size_t(i)]);
    const double wall = seconds_since(t);
    *cpu += process_cpu_seconds() - c0;
    return wall;
  }
};

// Tokens/s of each repetition, and (cpu_share) the CPU time the process got over wall time x
// threads while timed: well below 1 means other processes took the cores.
struct Timed {
  std::vector<double> tokens_per_s;
  double wall = 0, cpu = 0;
};

Timed time_runs(int reps, int64_t tokens, const std::function<double(double*)>& run) {
  Timed t;
  for (int rep = 0; rep < reps && tokens > 0; ++rep) {
    const double wall = run(&t.cpu);
    t.wall += wall;
    t.tokens_per_s.push_back(double(tokens) / wall);
  }
  return t;
}

// The machine's ceilings with the same threads, and the model's figures as fractions of them;
// pair by pair too, since what a shared host leaves to this process moves from second to second.
void add_ceilings(json& j, ModelRun& run, kernels::Isa isa, int threads, double decode_bytes, double prefill_flops) {
  const BenchOptions& o = run.o;
  BandwidthProbe probe(run.pool(), o.bandwidth_bytes, o.runtime.huge_pages);
  const double read_gbps = probe.read_gbps(5), triad_gbps = probe.triad_gbps(5);
  PeakResult peak = measure_peak(run.pool(), isa);
  j["machine"] = {{"threads", threads},
                  {"read_gbps", read_gbps},
                  {"triad_gbps", triad_gbps},
                  {"bandwidth_bytes", probe.bytes()},
                  {"bandwidth_huge_page_fraction", optional_json(probe.huge_page_fraction())},
                  {"fma_gflops", peak.fma_gflops},
                  {"gemm_in_cache_gflops", peak.gemm_gflops},
                  {"region_handover_us", peak.region_us},
                  {"isa", peak.isa}};
  double unused_cpu = 0;
  if (j.contains("tg")) {
    j["tg"]["fraction_of_bandwidth"] = j["tg"]["gbps"].get<double>() / read_gbps;
    // A decode run, then at once a bandwidth pass.
    std::vector<double> ratios;
    for (int rep = 0; rep < o.reps; ++rep) {
      const double gbps = decode_bytes * double(o.gen) / run.time_decode(&unused_cpu) / 1e9;
      ratios.push_back(gbps / probe.read_gbps(3));
    }
    j["tg"]["fraction_of_bandwidth_paired"] = Stats::of(ratios).to_json();
  }
  if (j.contains("pp")) {
    j["pp"]["fraction_of_peak"] = j["pp"]["gflops"].get<double>() / peak.fma_gflops;
    // Each prefill run against the FMA peak measured right after it (the cores' clock and a
    // sibling hyperthread's load move too).
    std::vector<double> ratios;
    for (int rep = 0; rep < o.reps; ++rep) {
      const double gflops = prefill_flops / run.time_prefill(&unused_cpu) / 1e9;
      ratios.push_back(gflops / fma_peak_gflops(run.pool(), 10, isa));
    }
    j["pp"]["fraction_of_peak_paired"] = Stats::of(ratios).to_json();
  }
}

}  // namespace

BenchResult run_bench(const BenchOptions& o) {
  json j;
  const int threads = o.threads > 0 ? o.threads : ThreadPool::hardware_threads();
  const uint64_t rss_start = current_rss_bytes();

  auto t0 = Clock::now();
  std::shared_ptr<const Program> program =
      Program::load(o.path, o.runtime.huge_pages ? PagePolicy::HugePages : PagePolicy::Plain);
  std::unique_ptr<IOManager> io = IOManagerRegistry::instance().load(program, HeapAllocator::instance(), o.runtime);
  const double load_s = seconds_since(t0);
  const uint64_t rss_loaded = current_rss_bytes();
  const ModelInfo info = io->model();
  if (o.prompt < 0 || o.gen < 0) fail("-p and -n must not be negative");
  if (o.prompt + o.gen + 2 > info.max_context)
    fail("-p ", o.prompt, " + -n ", o.gen, " (+2 warm-up tokens) exceed the program's max_context ", info.max_context);

  const MethodCost prefill_cost = method_cost(*program, info.prefill_method);
  const MethodCost decode_cost = method_cost(*program, info.decode_method);

  const kernels::Isa isa = kernels::best_isa(o.runtime.isa);  // the methods' kernels
  RunnerOptions runner_options;
  runner_options.threads = threads;
  runner_options.runtime = o.runtime;
  ModelRun run(o, std::make_unique<Runner>(std::move(io), nullptr, runner_options));
  const double first_s = run.warm_up();
  const Timed pp = time_runs(o.reps, o.prompt, [&](double* cpu) { return run.time_prefill(cpu); });
  const Timed tg = time_runs(o.reps, o.gen, [&](double* cpu) { return run.time_decode(cpu); });
  const uint64_t peak_rss = peak_rss_bytes();
  // Every weight has been read by now; how much of the mapping huge pages back decides how
  // close decode gets to the bandwidth (see util/huge_pages.h).
  const std::optional<double> weights_huge = resident_huge_fraction(program->file_data());

  // Work per benchmark, from the graph: useful prefill FLOPs, bytes read per decode step.
  double prefill_flops = 0;
  if (o.prompt > 0)
    for (const Step& s : run.runner->io().plan(0, size_t(o.prompt)))
      prefill_flops += (s.kind == StepKind::Prefill ? prefill_cost : decode_cost).flops(s.start_pos, int64_t(s.count));
  double decode_bytes = 0, decode_flops = 0;
  for (int64_t i = 0; i < o.gen; ++i) {
    decode_bytes += decode_cost.decode_bytes(o.prompt + i + 1);
    decode_flops += decode_cost.flops(o.prompt + i, 1);
  }
  if (o.gen > 0) decode_bytes /= double(o.gen), decode_flops /= double(o.gen);

  const json meta = program->metadata();
  const double cache_bytes = 2.0 * double(info.n_layers * info.n_kv_heads * info.max_context * info.head_dim) *
                             double(dtype_size(info.cache_dtype));
  j["model"] = {{"path", o.path},
                {"model_type", meta.value(hf_static::keys::model_type, "")},
                {"weights_dtype", meta.value(hf_static::keys::weights_dtype, "")},
                {"cache_dtype", dtype_name(info.cache_dtype)},
                {"n_layers", info.n_layers},
                {"max_context", info.max_context},
                {"prefill_len", info.prefill_len},
                {"linear_params", decode_cost.linear_params},
                {"expert_bytes", decode_cost.expert_bytes},
                {"weight_bytes", program->weight_bytes()},
                {"cache_bytes", cache_bytes},
                {"file_bytes", program->file_size()}};
  j["threads"] = threads;
  j["isa"] = kernels::isa_name(isa);
  j["cpu_features"] = kernels::isa_cpu_features();
  j["load"] = {{"seconds", load_s},
               {"rss_growth_bytes", rss_loaded > rss_start ? rss_loaded - rss_start : 0},
               {"first_prompt_seconds", first_s},
               {"huge_page_fraction", optional_json(weights_huge)}};
  if (!pp.tokens_per_s.empty()) {
    Stats s = Stats::of(pp.tokens_per_s);
    j["pp"] = {{"tokens", o.prompt},
               {"tokens_per_s", s.to_json()},
               {"flops_per_run", prefill_flops},
               {"gflops", prefill_flops / double(o.prompt) * s.median / 1e9},
               {"cpu_share", pp.cpu / pp.wall / threads}};
  }
  if (!tg.tokens_per_s.empty()) {
    Stats s = Stats::of(tg.tokens_per_s);
    j["tg"] = {{"tokens", o.gen},
               {"context_start", o.prompt},
               {"tokens_per_s", s.to_json()},
               {"bytes_per_token", decode_bytes},
               {"routed_expert_bytes_per_token", decode_cost.routed_expert_bytes},
               {"flops_per_token", decode_flops},
               {"gbps", decode_bytes * s.median / 1e9},
               {"cpu_share", tg.cpu / tg.wall / threads}};
  }
  const double budget = double(program->weight_bytes()) + cache_bytes + 64.0 * (1 << 20);
  j["memory"] = {{"peak_rss_bytes", peak_rss},
                 {"weights_plus_caches_bytes", double(program->weight_bytes()) + cache_bytes},
                 {"budget_bytes", budget},
                 {"within_budget", double(peak_rss) <= budget}};
  if (o.ceilings) add_ceilings(j, run, isa, threads, decode_bytes, prefill_flops);
  return {std::move(j)};
}

}  // namespace hfstatic::bench
