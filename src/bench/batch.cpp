#include "bench/batch.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <vector>

#include "format/program.h"
#include "io/io_manager.h"
#include "kernels/thread_pool.h"

namespace hfstatic::bench {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds of n lockstep decode steps of every manager in `ios`, each fed its prompt first.
double time_lockstep(std::span<IOManager* const> ios, const std::vector<int64_t>& prompt, int64_t n, ThreadPool* pool) {
  const int64_t start = int64_t(prompt.size());
  for (IOManager* io : ios) {
    io->reset();
    if (Status s = io->feed(0, prompt, pool); !s.ok()) fail(s.message());
  }
  std::vector<int64_t> positions(ios.size()), tokens(ios.size());
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) {
    for (size_t b = 0; b < ios.size(); ++b) {
      positions[b] = start + i;
      tokens[b] = (int64_t(b) * 7919 + i * 31 + 1) % ios[b]->model().vocab_size;
    }
    Status s = ios.size() == 1 ? ios[0]->step(StepKind::Decode, positions[0], std::span(tokens).first(1), pool)
                               : IOManager::decode_batch(ios, positions, tokens, pool);
    if (!s.ok()) fail(s.message());
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

nlohmann::json run_batch_bench(const BenchOptions& o, int64_t streams) {
  auto program = Program::load(o.path, o.runtime.huge_pages ? PagePolicy::HugePages : PagePolicy::Plain);
  ThreadPool pool(o.threads > 0 ? o.threads : ThreadPool::hardware_threads());
  std::vector<std::unique_ptr<IOManager>> managers;
  std::vector<IOManager*> ios;
  for (int64_t b = 0; b < streams; ++b) {
    managers.push_back(IOManagerRegistry::instance().load(program, HeapAllocator::instance(), o.runtime));
    ios.push_back(managers.back().get());
  }
  const ModelInfo& info = ios[0]->model();
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int64_t> tok(0, info.vocab_size - 1);
  std::vector<int64_t> prompt(size_t(std::clamp<int64_t>(o.prompt, 1, info.max_context - 1)));
  for (auto& t : prompt) t = tok(rng);
  const int64_t n = std::max<int64_t>(std::min(o.gen, info.max_context - int64_t(prompt.size())), 1);
  time_lockstep(ios, prompt, std::min<int64_t>(n, 4), &pool);  // warm-up
  std::vector<double> single, batched;
  for (int r = 0; r < std::max(o.reps, 1); ++r) {
    single.push_back(time_lockstep(std::span(ios).first(1), prompt, n, &pool));
    batched.push_back(time_lockstep(ios, prompt, n, &pool));
  }
  const double one = median(single), all = median(batched);
  nlohmann::json j;
  j["streams"] = streams;
  j["tokens"] = n;
  j["single"] = {{"tokens_per_s", double(n) / one}, {"ms_per_token", 1e3 * one / double(n)}};
  j["batched"] = {{"tokens_per_s", double(streams * n) / all},
                  {"ms_per_token", 1e3 * all / double(n)},
                  {"speedup", double(streams) * one / all},
                  {"latency_ratio", all / one}};
  return j;
}

}  // namespace hfstatic::bench
