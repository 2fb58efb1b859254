// Decode attention (one query row) over float16 and float32 caches: microseconds a layer for the
// head layouts of smollm2-135m (9 query heads, 3 KV heads) and qwen2.5-0.5b (14, 2), head_dim 64,
// at several visible lengths, each of 30 layers with its own caches (as a decode step reads them).
// Prints a table; not a test.
//
//   bench_attention_decode [--threads 1,2] [--visible 128,512,1024,2048] [--reps 20] [--isa avx2]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "bench/bench.h"
#include "bench_args.h"
#include "kernels/isa.h"
#include "kernels/kernels.h"
#include "kernels/parallel.h"
#include "kernels/thread_pool.h"
#include "util/dtype.h"

namespace hfstatic {
namespace {

struct Layout {
  const char* name;
  int64_t heads, kv_heads, head_dim;
};
const Layout kLayouts[] = {{"smollm2-135m", 9, 3, 64}, {"qwen2.5-0.5b", 14, 2, 64}};
constexpr int kLayers = 30;

// Seconds of the fastest of `reps` passes over the layers, `visible` slots of max_context seen.
double time_layers(const kernels::KernelTable& k, ThreadPool& pool, const Layout& l, DType cache, int64_t visible,
                   int64_t max_context, int reps) {
  const int64_t cache_values = l.kv_heads * max_context * l.head_dim;
  const size_t cache_bytes = size_t(cache_values) * dtype_size(cache);
  std::vector<std::vector<uint8_t>> k_caches(kLayers), v_caches(kLayers);
  uint64_t s = 0x9e3779b97f4a7c15ull;
  auto value = [&] {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return float(int64_t(s % 2001) - 1000) / 1000.0f;
  };
  for (int layer = 0; layer < kLayers; ++layer) {
    for (auto* c : {&k_caches[size_t(layer)], &v_caches[size_t(layer)]}) {
      c->resize(cache_bytes);
      for (int64_t i = 0; i < cache_values; ++i) {
        if (cache == DType::F16)
          reinterpret_cast<uint16_t*>(c->data())[i] = f32_to_f16(value());
        else
          reinterpret_cast<float*>(c->data())[i] = value();
      }
    }
  }
  std::vector<float> q(size_t(l.heads * l.head_dim)), out(q.size());
  for (float& x : q) x = value();
  std::vector<float> mask(size_t(max_context), -std::numeric_limits<float>::infinity());
  std::fill(mask.begin(), mask.begin() + visible, 0.0f);
  ScopedThreadPool scope(&pool);
  return 1e-6 * bench::fastest_us_per_call(1, reps, [&] {
           for (int layer = 0; layer < kLayers; ++layer)
             k.attention(q.data(), 1, l.heads, l.kv_heads, l.head_dim, k_caches[size_t(layer)].data(),
                         v_caches[size_t(layer)].data(), cache, max_context, mask.data(), 0.125f, 0.0f, out.data());
         });
}

int run(int argc, char** argv) {
  std::vector<int> threads = {1, 2}, visibles = {128, 512, 1024, 2048};
  int reps = 20;
  kernels::Isa isa = kernels::best_isa();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--threads") {
      threads = bench_args::int_list(v);
    } else if (a == "--visible") {
      visibles = bench_args::int_list(v);
    } else if (a == "--reps") {
      reps = std::max(1, std::atoi(v.c_str()));
    } else if (a == "--isa") {
      isa = bench_args::isa_cap(v);
    }
  }
  const kernels::KernelTable& k = *kernels::kernel_table(isa);
  for (int t : threads) {
    ThreadPool pool(t);
    std::printf("\n== %s, %d thread(s): us a layer (fastest pass of %d over %d layers)\n", kernels::isa_name(isa), t,
                reps, kLayers);
    std::printf("%-14s %-8s", "layout", "cache");
    for (int visible : visibles) std::printf(" %8d", visible);
    std::printf("\n");
    for (const Layout& l : kLayouts)
      for (DType cache : {DType::F16, DType::F32}) {
        std::printf("%-14s %-8s", l.name, dtype_name(cache));
        for (int visible : visibles)
          std::printf(" %8.2f",
                      time_layers(k, pool, l, cache, std::clamp(visible, 1, 2048), 2048, reps) * 1e6 / kLayers);
        std::printf("\n");
      }
  }
  return 0;
}

}  // namespace
}  // namespace hfstatic

int main(int argc, char** argv) { return hfstatic::run(argc, argv); }
