#include "bench/speculation.h"

#include <algorithm>
#include <random>

#include "runner/drafter.h"
#include "runner/runner.h"

namespace hfstatic::bench {

namespace {

// The true greedy continuation, known in advance: every draft is right.
class OracleDrafter : public Drafter {
 public:
  explicit OracleDrafter(std::vector<int64_t> script) : script_(std::move(script)) {}
  std::vector<int64_t> propose(std::span<const int64_t> context, int64_t max_tokens) override {
    std::vector<int64_t> out;
    for (size_t i = context.size(); i < script_.size() && int64_t(out.size()) < max_tokens; ++i)
      out.push_back(script_[i]);
    return out;
  }

 private:
  std::vector<int64_t> script_;
};

struct Timed {
  double tokens_per_s = 0;
  GenerationResult last;
};

// Median decode tokens/s of `reps` greedy generations (after the prompt's step).
Timed time_generation(Runner& runner, const std::vector<int64_t>& prompt, int64_t n, Drafter* drafter, int64_t k,
                      int reps) {
  GenerationConfig g;
  g.max_new_tokens = n;
  g.ignore_eos = true;
  g.drafter = drafter;
  g.draft_max = k;
  std::vector<double> rates;
  Timed t;
  for (int r = 0; r < std::max(reps, 1); ++r) {
    runner.reset();
    t.last = runner.generate_tokens(prompt, g);
    rates.push_back(t.last.stats.decode_tokens_per_s());
  }
  std::sort(rates.begin(), rates.end());
  t.tokens_per_s = rates[rates.size() / 2];
  return t;
}

double tokens_per_step(const GenerationStats& s) {
  return s.steps ? double(s.generated_tokens - 1) / double(s.steps) : 0.0;
}

}  // namespace

nlohmann::json run_speculation_bench(const BenchOptions& o, int64_t lookup) {
  RunnerOptions options;
  options.threads = o.threads;
  options.runtime = o.runtime;
  auto runner = Runner::load(o.path, options);
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int64_t> tok(0, runner->model().vocab_size - 1);
  std::vector<int64_t> prompt(size_t(std::max<int64_t>(o.prompt, 1)));
  for (auto& t : prompt) t = tok(rng);
  const int64_t n = std::min(o.gen, runner->model().max_context - int64_t(prompt.size()));
  time_generation(*runner, prompt, n, nullptr, 0, 1);  // warm-up

  const Timed plain = time_generation(*runner, prompt, n, nullptr, 0, o.reps);
  PromptLookup drafter;
  const Timed spec = time_generation(*runner, prompt, n, &drafter, lookup, o.reps);
  const GenerationStats& s = spec.last.stats;
  nlohmann::json j;
  j["tokens"] = n;
  j["plain"] = {{"tokens_per_s", plain.tokens_per_s}};
  j["lookup"] = {{"k", lookup},
                 {"tokens_per_s", spec.tokens_per_s},
                 {"speedup", spec.tokens_per_s / plain.tokens_per_s},
                 {"tokens_per_step", tokens_per_step(s)},
                 {"acceptance", s.drafted_tokens ? double(s.accepted_tokens) / double(s.drafted_tokens) : 0.0},
                 {"identical", spec.last.tokens == plain.last.tokens}};
  std::vector<int64_t> script = prompt;
  script.insert(script.end(), plain.last.tokens.begin(), plain.last.tokens.end());
  OracleDrafter oracle(script);
  j["ceiling"] = nlohmann::json::array();
  for (int64_t k : {1, 2, 4, 8}) {
    const Timed c = time_generation(*runner, prompt, n, &oracle, k, o.reps);
    j["ceiling"].push_back({{"k", k},
                            {"tokens_per_s", c.tokens_per_s},
                            {"speedup", c.tokens_per_s / plain.tokens_per_s},
                            {"tokens_per_step", tokens_per_step(c.last.stats)}});
  }
  return j;
}

}  // namespace hfstatic::bench
