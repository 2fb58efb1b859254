// Decode-shaped linear products (one row) over float16, int8 and int4 weights: GB/s of weight
// bytes read (values + scales) against the machine's read pass, for the smollm2-135m matrices
// one at a time and for a whole decode step's products (30 layers: q/k/v and gate/up as groups
// with the folded rms_norm, o, down with the folded silu_mul, then the 49152-row lm_head), with
// the executor's idle prefetch; and the layers' products over a 128-row prompt (the blocked
// multiply, GFLOP/s). The weights cycle through enough copies that every call reads
// them from memory. Prints a table; not a test.
//
//   bench_linear_decode [--threads 1,2] [--reps 7] [--isa avx2] [--only model|shapes|prefill|overlap|chained]
//                       [--format int4] [--hot 1] [--rows B] [--prompt-rows N]
//   (--hot 1: the single-matrix shapes from one copy, in cache: the kernels' compute bound;
//    --only chained: the decode step's products reading each other's outputs, by the pool's
//    regions and by threads that each own a share of every product, a barrier between products;
//    --only overlap: each shape in cache (L2, or L3 where it is larger) and from memory, against
//    the serial and the overlapped bounds;
//    --rows B: the decode step's products over B rows on the few-rows variant, as a batched
//    decode of B sequences runs them; --prompt-rows N: the prefill section over N rows, 128 unless
//    given)
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench.h"
#include "bench_args.h"
#include "kernels/isa.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "kernels/thread_pool.h"
#include "util/huge_pages.h"

namespace hfstatic {
namespace {

using kernels::LinearOutput;

struct Format {
  const char* name;
  DType type;
  int64_t group;  // 0: not quantized
};
const Format kFormats[] = {
    {"float16", DType::F16, 0},    {"int8 g32", DType::I8, 32}, {"int8 g64", DType::I8, 64},
    {"int8 g128", DType::I8, 128}, {"int4 g32", DType::I4, 32}, {"int4 g64", DType::I4, 64},
    {"int4 g128", DType::I4, 128},
};

bool hot = false;
int64_t decode_rows = 1;    // --rows
int64_t prompt_rows = 128;  // --prompt-rows
std::string format_filter;  // --format: only the formats whose name contains it (float16 always runs)
bool selected(const Format& f) {
  return f.type == DType::F16 || std::string(f.name).find(format_filter) != std::string::npos;
}

uint64_t next(uint64_t& s) {
  s ^= s << 13, s ^= s >> 7, s ^= s << 17;
  return s;
}

// Memory advised huge pages, as a program's weights are (MappedFile::open), handed out in order
// in 64-byte aligned pieces; 2 GiB reserved, touched only as used.
class Arena {
 public:
  Arena() : base_(static_cast<uint8_t*>(std::aligned_alloc(size_t(2) << 20, kBytes)), std::free) {
    advise_huge_pages(base_.get(), kBytes);
  }
  uint8_t* take(int64_t bytes) {
    uint8_t* p = base_.get() + used_;
    used_ += (bytes + 63) / 64 * 64;
    if (used_ > int64_t(kBytes)) std::abort();
    return p;
  }

 private:
  static constexpr size_t kBytes = size_t(2) << 30;
  std::unique_ptr<uint8_t[], void (*)(void*)> base_;
  int64_t used_ = 0;
};

// A matrix [out, in] in a format: random values (float16 in [-0.25, 0.25), int8 in [-127, 127],
// any nibbles) and float16 scales.
struct Matrix {
  uint8_t* w = nullptr;
  uint16_t* scales = nullptr;
  int64_t out = 0, in = 0, bytes = 0;
  Format format{};

  Matrix(Arena& arena, const Format& f, int64_t out_, int64_t in_, uint64_t seed) : out(out_), in(in_), format(f) {
    const int64_t wb = dtype_bytes(f.type, out * in), sb = f.group ? out * (in / f.group) * 2 : 0;
    bytes = wb + sb;
    w = arena.take(wb);
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    if (f.type == DType::F16) {
      uint16_t* h = reinterpret_cast<uint16_t*>(w);
      for (int64_t i = 0; i < out * in; ++i) h[i] = f32_to_f16(float(int64_t(next(s) % 2001) - 1000) / 4000.0f);
    } else {
      for (int64_t i = 0; i < wb; ++i) {
        const uint8_t b = uint8_t(next(s));
        w[i] = f.type == DType::I8 && b == 0x80 ? 0 : b;
      }
    }
    if (f.group) {
      scales = reinterpret_cast<uint16_t*>(arena.take(sb));
      for (int64_t i = 0; i < sb / 2; ++i) scales[i] = f32_to_f16(float(next(s) % 1000 + 1) * 1e-5f);
    }
  }
  LinearOutput output(float* y) const { return {w, format.type, out, nullptr, DType::F32, y, {scales, format.group}}; }
};

// One call of a decode step: a group of products of the same x, maybe with a folded op.
struct Call {
  std::vector<const Matrix*> products;
  int fold = 0;  // 0 none, 1 rms_norm, 2 silu_mul
};

// Runs the calls in order, each under the idle prefetch of the next one's first reads, `reps`
// times through; returns the seconds of the fastest pass. few_rows: the few-rows variant whatever
// the rows (a batched decode), else the one linear_group picks.
double run_calls(const kernels::KernelTable& k, ThreadPool& pool, const std::vector<Call>& calls, int reps,
                 int64_t rows = 1, bool few_rows = true) {
  ScopedThreadPool scope(&pool);
  const int64_t in_max = 1536;
  std::vector<float> x(size_t(rows * in_max)), up(x.size()), norm(size_t(in_max), 1.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 17) / 17.0f - 0.5f, up[i] = float(i % 13) / 13.0f;
  int64_t out_max = 0;
  for (const Call& c : calls)
    for (const Matrix* m : c.products) out_max = std::max(out_max, m->out);
  std::vector<std::vector<float>> ys(4, std::vector<float>(size_t(rows * out_max)));
  std::vector<std::vector<LinearOutput>> outputs(calls.size());
  for (size_t c = 0; c < calls.size(); ++c)
    for (size_t i = 0; i < calls[c].products.size(); ++i)
      outputs[c].push_back(calls[c].products[i]->output(ys[i].data()));
  std::vector<std::vector<PrefetchRange>> first(calls.size());
  for (size_t c = 0; c < calls.size(); ++c) {
    const auto& next_call = outputs[(c + 1) % calls.size()];
    first[c] = k.linear_group_first_reads(rows, calls[(c + 1) % calls.size()].products[0]->in, next_call.data(),
                                          int(next_call.size()), pool.threads(), size_t(256) << 10);
  }
  return 1e-6 * bench::fastest_us_per_call(1, reps, [&] {
           for (size_t c = 0; c < calls.size(); ++c) {
             ScopedIdlePrefetch idle(first[c]);
             kernels::LinearFusion fusion;
             if (calls[c].fold == 1)
               fusion.norm_w = norm.data(), fusion.norm_type = DType::F32, fusion.norm_eps = 1e-5f;
             if (calls[c].fold == 2) fusion.up = up.data();
             (few_rows ? k.linear_few_rows : k.linear_group)(x.data(), rows, calls[c].products[0]->in,
                                                             outputs[c].data(), int(outputs[c].size()),
                                                             calls[c].fold ? &fusion : nullptr);
           }
         });
}

int64_t bytes_of(const std::vector<Call>& calls) {
  int64_t b = 0;
  for (const Call& c : calls)
    for (const Matrix* m : c.products) b += m->bytes;
  return b;
}

// Seconds a call of one out x in matrix takes, the fastest of `reps` passes: from one copy (in
// cache) or through copies filling 256 MiB (each call reads its matrix from memory). *bytes: the
// matrix's (values + scales).
double single_matrix_seconds(const kernels::KernelTable& k, ThreadPool& pool, const Format& f, int64_t out, int64_t in,
                             bool in_cache, int reps, int64_t* bytes) {
  const int64_t one = (dtype_bytes(f.type, in) + (f.group ? in / f.group * 2 : 0)) * out;
  const int64_t copies = in_cache ? 1 : std::max<int64_t>(2, (int64_t(256) << 20) / one);
  Arena arena;
  std::vector<std::unique_ptr<Matrix>> m;
  std::vector<Call> calls;
  for (int64_t c = 0; c < copies; ++c) {
    m.push_back(std::make_unique<Matrix>(arena, f, out, in, uint64_t(c + 1)));
    calls.push_back({{m.back().get()}, 0});
  }
  *bytes = m[0]->bytes;
  return run_calls(k, pool, calls, reps, decode_rows) / double(copies);
}

void shapes(const kernels::KernelTable& k, ThreadPool& pool, int reps, double read_gbps) {
  struct Shape {
    int64_t out, in;
  };
  const Shape list[] = {{576, 576}, {576, 1536}, {1536, 576}, {49152, 576}};
  std::printf("\n%-12s %-10s %8s %10s %8s %8s\n", "out x in", "weights", "MB", "us/call", "GB/s", "% read");
  for (const Shape& s : list)
    for (const Format& f : kFormats) {
      if (!selected(f) || (f.group && s.in % f.group)) continue;
      int64_t bytes = 0;
      const double t = single_matrix_seconds(k, pool, f, s.out, s.in, hot, reps, &bytes);
      const double gbps = double(bytes) / t / 1e9;
      std::printf("%5ldx%-6ld %-10s %8.2f %10.1f %8.2f %7.1f%%\n", long(s.out), long(s.in), f.name, bytes / 1e6,
                  t * 1e6, gbps, 100 * gbps / read_gbps);
    }
}

// Whether a thread computes while its weights stream in: each single-matrix product in cache (one
// copy) and from memory (copies filling 256 MiB), against the two bounds the read pass gives, the
// serial one (reading, then computing: 1 / (1 / in cache + 1 / read pass)) and the overlapped one
// (the slower of the two). overlap: where from memory lies between them, 0% serial, 100% overlapped.
void overlap(const kernels::KernelTable& k, ThreadPool& pool, int reps, double read_gbps) {
  const int64_t list[][2] = {{576, 576}, {576, 1536}, {1536, 576}};
  std::printf("\n%-12s %-10s %10s %10s %10s %10s %8s  (GB/s, %ld row(s))\n", "out x in", "weights", "memory",
              "in cache", "serial", "overlapped", "overlap", long(decode_rows));
  for (const auto& [out, in] : list)
    for (const Format& f : kFormats) {
      if (!selected(f) || (f.group && in % f.group)) continue;
      double gbps[2];  // in cache, from memory
      for (int cold = 0; cold < 2; ++cold) {
        int64_t bytes = 0;
        const double t = single_matrix_seconds(k, pool, f, out, in, !cold, cold ? reps : reps * 20, &bytes);
        gbps[cold] = double(bytes) / t / 1e9;
      }
      const double serial = 1 / (1 / gbps[0] + 1 / read_gbps), overlapped = std::min(gbps[0], read_gbps);
      std::printf("%5ldx%-6ld %-10s %10.2f %10.2f %10.2f %10.2f %7.0f%%\n", long(out), long(in), f.name, gbps[1],
                  gbps[0], serial, overlapped, 100 * (gbps[1] - serial) / (overlapped - serial));
    }
}

// The products of a smollm2-135m decode step in format f, their matrices taken from `arena` and
// kept in m: 30 layers of q/k/v and gate/up (folded rms_norm), o, down (folded silu_mul), then the
// 49152-row lm_head (folded rms_norm) if lm_head.
constexpr int64_t kHidden = 576, kIntermediate = 1536;
std::vector<Call> decode_step_calls(const Format& f, Arena& arena, std::vector<std::unique_ptr<Matrix>>& m,
                                    bool lm_head) {
  const int64_t hidden = kHidden, kv = 192, inter = kIntermediate, vocab = 49152, layers = 30;
  auto add = [&](int64_t out, int64_t in) {
    m.push_back(std::make_unique<Matrix>(arena, f, out, in, uint64_t(m.size() + 1)));
    return m.back().get();
  };
  std::vector<Call> calls;
  for (int64_t l = 0; l < layers; ++l) {
    const Matrix* q = add(hidden, hidden);
    const Matrix* kk = add(kv, hidden);
    const Matrix* v = add(kv, hidden);
    calls.push_back({{q, kk, v}, 1});
    calls.push_back({{add(hidden, hidden)}, 0});
    const Matrix* gate = add(inter, hidden);
    const Matrix* up = add(inter, hidden);
    calls.push_back({{gate, up}, 1});
    calls.push_back({{add(hidden, inter)}, 2});
  }
  if (lm_head) calls.push_back({{add(vocab, hidden)}, 1});
  return calls;
}

// The products of a smollm2-135m decode step.
// prefill_rows > 0: the layers' products (no lm_head) over that many rows, GFLOP/s.
void model(const kernels::KernelTable& k, ThreadPool& pool, int reps, double read_gbps, double* f16_seconds,
           int64_t prefill_rows = 0) {
  if (prefill_rows)
    std::printf("\n%-10s %8s %10s %10s %10s  (prefill, %ld rows, layers' products)\n", "weights", "MB", "ms/step",
                "GFLOP/s", "x float16", long(prefill_rows));
  else
    std::printf("\n%-10s %8s %10s %10s %8s %8s %10s  (decode, %ld row(s))\n", "weights", "MB", "ms/step", "steps/s",
                "GB/s", "% read", "x float16", long(decode_rows));
  for (const Format& f : kFormats) {
    if (!selected(f) || (f.group && kHidden % f.group)) continue;  // no groups of 128
    Arena arena;
    std::vector<std::unique_ptr<Matrix>> m;
    const std::vector<Call> calls = decode_step_calls(f, arena, m, !prefill_rows);
    const double t = run_calls(k, pool, calls, reps, prefill_rows ? prefill_rows : decode_rows, !prefill_rows);
    if (f.type == DType::F16) *f16_seconds = t;
    if (prefill_rows) {
      double flops = 0;
      for (const Call& c : calls)
        for (const Matrix* mm : c.products) flops += 2.0 * double(mm->out * mm->in * prefill_rows);
      std::printf("%-10s %8.1f %10.3f %10.1f %9.2fx\n", f.name, bytes_of(calls) / 1e6, t * 1e3, flops / t / 1e9,
                  *f16_seconds / t);
      continue;
    }
    const double gbps = double(bytes_of(calls)) / t / 1e9;
    std::printf("%-10s %8.1f %10.3f %10.1f %8.2f %7.1f%% %9.2fx\n", f.name, bytes_of(calls) / 1e6, t * 1e3, 1 / t, gbps,
                100 * gbps / read_gbps, *f16_seconds / t);
  }
}

// Threads that wait for each other: each publishes how many times it has arrived on a line of
// its own, then spins until every other has arrived as often.
class Barrier {
 public:
  explicit Barrier(int threads) : arrived_(size_t(threads)) {}
  void wait(int slot, uint64_t times) {
    arrived_[size_t(slot)].count.store(times, std::memory_order_release);
    for (size_t t = 0; t < arrived_.size(); ++t)
      for (int spins = 0; arrived_[t].count.load(std::memory_order_acquire) < times; ++spins) {
#if defined(__x86_64__) || defined(__i386__)
        if (spins < 4096) {
          __builtin_ia32_pause();
          continue;
        }
#endif
        std::this_thread::yield();  // more threads than cores
      }
  }

 private:
  struct alignas(64) Line {
    std::atomic<uint64_t> count{0};
  };
  std::vector<Line> arrived_;
};

// The decode step's products chained as a model chains them (each reads the previous one's first
// output, a folded silu_mul its second), run two ways: by the pool's regions (the calling thread
// folds and quantizes the input, then the threads share the features), and by the pool's number
// of threads each owning a fixed share of every product's features (owned_items, grains of 32), each
// folding and quantizing the whole input for itself, with a barrier after every product: as a
// step would run if it were one job of all the threads.
void chained(const kernels::KernelTable& k, ThreadPool& pool, int reps, double read_gbps) {
  const int threads = pool.threads();
  std::printf("\n%-10s %8s %14s %8s %14s %8s  (decode, 1 row, chained)\n", "weights", "MB", "regions ms", "% read",
              "shares ms", "% read");
  for (const Format& f : kFormats) {
    if (!selected(f) || (f.group && kHidden % f.group)) continue;
    Arena arena;
    std::vector<std::unique_ptr<Matrix>> m;
    const std::vector<Call> calls = decode_step_calls(f, arena, m, true);
    const size_t n = calls.size();
    std::vector<std::vector<std::vector<float>>> ys(n);
    for (size_t c = 0; c < n; ++c)
      for (const Matrix* mm : calls[c].products) ys[c].emplace_back(static_cast<size_t>(mm->out), 0.0f);
    std::vector<float> x0(static_cast<size_t>(kHidden)), norm(static_cast<size_t>(kIntermediate), 1.0f);
    for (size_t i = 0; i < x0.size(); ++i) x0[i] = float(i % 17) / 17.0f - 0.5f;
    auto input = [&](size_t c) { return c == 0 ? x0.data() : ys[c - 1][0].data(); };
    auto fusion_of = [&](size_t c) {
      kernels::LinearFusion fusion;
      if (calls[c].fold == 1) fusion.norm_w = norm.data(), fusion.norm_type = DType::F32, fusion.norm_eps = 1e-5f;
      if (calls[c].fold == 2) fusion.up = ys[c - 1][1].data();
      return fusion;
    };
    auto run_call = [&](size_t c, const std::vector<LinearOutput>& outputs) {
      const kernels::LinearFusion fusion = fusion_of(c);
      k.linear_few_rows(input(c), 1, calls[c].products[0]->in, outputs.data(), int(outputs.size()),
                        calls[c].fold ? &fusion : nullptr);
    };
    // shares[s][c]: thread s's features of call c's products.
    std::vector<std::vector<std::vector<LinearOutput>>> shares(static_cast<size_t>(threads));
    for (auto& share : shares) share.resize(n);
    std::vector<std::vector<LinearOutput>> whole(n);
    std::vector<std::vector<PrefetchRange>> first(n);
    for (size_t c = 0; c < n; ++c)
      for (size_t i = 0; i < calls[c].products.size(); ++i) {
        const Matrix* mm = calls[c].products[i];
        whole[c].push_back(mm->output(ys[c][i].data()));
        const int64_t row_bytes = dtype_bytes(f.type, mm->in);
        for (int s = 0; s < threads; ++s) {
          const auto [lo, hi] = owned_items(mm->out, 32, threads, s);
          LinearOutput o = mm->output(ys[c][i].data() + lo);
          o.w = mm->w + lo * row_bytes;
          if (f.group) o.quant.scales = mm->scales + lo * (mm->in / f.group);
          o.out = hi - lo;
          shares[size_t(s)][c].push_back(o);
        }
      }
    for (size_t c = 0; c < n; ++c) {
      const auto& next = whole[(c + 1) % n];
      first[c] = k.linear_group_first_reads(1, calls[(c + 1) % n].products[0]->in, next.data(), int(next.size()),
                                            threads, size_t(256) << 10);
    }
    double regions = 0;
    {
      ScopedThreadPool scope(&pool);
      regions = 1e-6 * bench::fastest_us_per_call(1, reps, [&] {
                  for (size_t c = 0; c < n; ++c) {
                    ScopedIdlePrefetch idle(first[c]);
                    run_call(c, whole[c]);
                  }
                });
    }
    // One pass: all threads start together, each runs its shares, a barrier after every call.
    Barrier barrier(threads);
    auto pass = [&](int s, uint64_t& arrivals) {
      barrier.wait(s, ++arrivals);
      for (size_t c = 0; c < n; ++c) {
        run_call(c, shares[size_t(s)][c]);
        barrier.wait(s, ++arrivals);
      }
    };
    std::vector<std::thread> others;
    for (int s = 1; s < threads; ++s)
      others.emplace_back([&, s] {
        uint64_t arrivals = 0;
        for (int r = 0; r < reps; ++r) pass(s, arrivals);
      });
    uint64_t arrivals = 0;
    const double own_shares = 1e-6 * bench::fastest_us_per_call(1, reps, [&] { pass(0, arrivals); });
    for (auto& o : others) o.join();
    const double bytes = double(bytes_of(calls));
    std::printf("%-10s %8.1f %14.3f %7.1f%% %14.3f %7.1f%%\n", f.name, bytes / 1e6, regions * 1e3,
                100 * bytes / regions / 1e9 / read_gbps, own_shares * 1e3, 100 * bytes / own_shares / 1e9 / read_gbps);
  }
}

int run(int argc, char** argv) {
  std::vector<int> threads = {1, 2};
  int reps = 7;
  std::string only;
  kernels::Isa isa = kernels::best_isa();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--threads") {
      threads = bench_args::int_list(v);
    } else if (a == "--reps") {
      reps = std::atoi(v.c_str());
    } else if (a == "--isa") {
      isa = bench_args::isa_cap(v);
    } else if (a == "--hot") {
      hot = v == "1";
    } else if (a == "--rows") {
      decode_rows = std::max<int64_t>(1, std::atoll(v.c_str()));
    } else if (a == "--format") {
      format_filter = v;
    } else if (a == "--prompt-rows") {
      prompt_rows = std::max<int64_t>(1, std::atoll(v.c_str()));
    } else if (a == "--only") {
      only = v;
    }
  }
  const kernels::KernelTable& k = *kernels::kernel_table(isa);
  for (int t : threads) {
    ThreadPool pool(t);
    bench::BandwidthProbe probe(&pool, uint64_t(512) << 20);
    const double read_gbps = probe.read_gbps(5);
    std::printf("\n== %s, %d thread(s), read pass %.2f GB/s\n", kernels::isa_name(isa), t, read_gbps);
    double f16_seconds = 0;
    const bool other = only == "prefill" || only == "overlap" || only == "chained";
    if (only != "shapes" && !other) model(k, pool, reps, read_gbps, &f16_seconds);
    if (only != "model" && !other) shapes(k, pool, reps, read_gbps);
    if (only == "overlap") overlap(k, pool, reps, read_gbps);
    if (only == "chained") chained(k, pool, reps, read_gbps);
    if (only == "prefill" || only.empty()) model(k, pool, std::max(1, reps / 3), read_gbps, &f16_seconds, prompt_rows);
    std::printf("read pass after: %.2f GB/s\n", probe.read_gbps(3));
  }
  return 0;
}

}  // namespace
}  // namespace hfstatic

int main(int argc, char** argv) { return hfstatic::run(argc, argv); }
