#include "server/prefix_cache.h"

#include <algorithm>

#include "io/io_manager.h"
#include "runner/runner.h"

namespace hfstatic::server {

namespace {

// The kind of step that feeds each of n positions fed from `from`.
std::vector<StepKind> step_kinds(const IOManager& io, size_t from, size_t n) {
  std::vector<StepKind> kinds;
  kinds.reserve(n);
  for (const Step& s : io.plan(int64_t(from), n)) kinds.insert(kinds.end(), s.count, s.kind);
  return kinds;
}

}  // namespace

bool same_plan_as_cold(const IOManager& io, size_t from, size_t n) {
  if (from == 0) return true;
  if (from >= n) return false;
  const std::vector<StepKind> cold = step_kinds(io, 0, n), warm = step_kinds(io, from, n - from);
  return std::equal(warm.begin(), warm.end(), cold.begin() + std::ptrdiff_t(from));
}

size_t SlotHistory::shared(std::span<const int64_t> prompt) const {
  if (prompt.empty()) return 0;
  const size_t most = std::min(tokens_.size(), prompt.size() - 1);
  size_t n = 0;
  while (n < most && tokens_[n] == prompt[n]) ++n;
  return n;
}

size_t SlotHistory::prepare(Runner& runner, std::span<const int64_t> prompt) {
  size_t reuse = shared(prompt);
  // Past the last whole chunk a cold run decodes where a run from `reuse` may still prefill (or
  // the reverse); from a chunk boundary both plans are the same.
  if (reuse > 0 && !same_plan_as_cold(runner.io(), reuse, prompt.size())) {
    const size_t chunk = size_t(std::max<int64_t>(1, runner.model().prefill_len));
    reuse = reuse / chunk * chunk;
    if (reuse > 0 && !same_plan_as_cold(runner.io(), reuse, prompt.size())) reuse = 0;
  }
  if (reuse == 0) {
    runner.reset();
  } else {
    runner.rewind(runner.context().size() - reuse);
  }
  tokens_.resize(reuse);
  return reuse;
}

void SlotHistory::update(Runner& runner, std::span<const int64_t> prompt) {
  // prepare() chose a start from which the prompt is fed with a cold run's plan: all of it is exact.
  const std::vector<int64_t>& context = runner.context();
  const size_t fed = size_t(runner.position());
  tokens_.assign(prompt.begin(), prompt.end());
  if (fed <= prompt.size()) return;
  // Sampled tokens were fed by decode steps: exact only where a cold run decodes too.
  const std::vector<StepKind> cold = step_kinds(runner.io(), 0, fed);
  for (size_t p = prompt.size(); p < fed && cold[p] == StepKind::Decode; ++p) tokens_.push_back(context[p]);
}

}  // namespace hfstatic::server
